"""Issue 38, point 6: a token in a URL is never accepted and never logged. Every writer of
URLs redacts `token=`, `key=`, `access_token=` and `api_key=` with one function
(config/logs.py): gunicorn's access log (its run is in test_gunicorn.py), Django's
development server, and the console handler."""

from __future__ import annotations

import datetime as dt
import logging
import threading
import urllib.error
import urllib.request

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.servers.basehttp import WSGIRequestHandler, WSGIServer
from gunicorn.config import Config

from accounts import services
from config.gunicorn import RedactingLogger
from config.logs import RedactSecrets, redact_secrets
from tests.support.beat import wait_for

SECRET = "cwb_S3cretKeyInTheUrl"


@pytest.mark.parametrize(
    ("logged", "written"),
    [
        ("GET /api/runs/?token=abc&page=2 HTTP/1.1",
         "GET /api/runs/?token=REDACTED&page=2 HTTP/1.1"),
        ("token=abc&page=2", "token=REDACTED&page=2"),  # a query string alone
        ("/x?page=1&KEY=abc#top", "/x?page=1&KEY=REDACTED#top"),
        ("https://h/p?access_token=a&api_key=b", "https://h/p?access_token=REDACTED&api_key=REDACTED"),
        ('"GET /p?key=abc HTTP/1.1" 401 58', '"GET /p?key=REDACTED HTTP/1.1" 401 58'),
        ("/p?tokens=1&monkey=2&token_type=3", "/p?tokens=1&monkey=2&token_type=3"),  # not secrets
        ("nothing to see", "nothing to see"),
    ],
)  # fmt: skip
def test_what_is_redacted(logged, written):
    assert redact_secrets(logged) == written


def test_the_filter_rewrites_the_message_and_keeps_the_record():
    args = (f"GET /?token={SECRET}", 200)
    record = logging.LogRecord("x", logging.INFO, __file__, 1, '"%s" %s', args, None)
    assert RedactSecrets().filter(record) is True
    assert record.getMessage() == '"GET /?token=REDACTED" 200'


@pytest.fixture
def dev_server():
    """Django's development server (runserver's classes) on a free port, in a thread."""
    server = WSGIServer(("127.0.0.1", 0), WSGIRequestHandler)
    server.set_app(WSGIHandler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.django_db(transaction=True)
def test_a_token_in_the_url_is_refused_and_not_in_the_development_servers_log(
    dev_server, owner, caplog
):
    _, key = services.api_token_create(user=owner, name="in a URL")
    with caplog.at_level(logging.INFO):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{dev_server}/api/tokens/?token={key}&page=1", timeout=10)
        with urllib.request.urlopen(f"{dev_server}/livez?api_key={SECRET}", timeout=10) as page:
            assert page.status == 200

        # The server logs a request once its answer is sent.
        wait_for(lambda: len(logged(caplog)) >= 3, 10, lambda: str(logged(caplog)))

    assert refused.value.code in (401, 403)  # the key in the URL authenticates nobody
    lines = logged(caplog)
    assert any("/api/tokens/?token=REDACTED&page=1" in line for line in lines), lines
    assert any("/livez?api_key=REDACTED" in line for line in lines), lines
    assert not any(key in line or SECRET in line for line in lines), lines


def logged(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records]


class _Response:
    status = "200 OK"
    sent = 2
    headers = [("Content-Type", "text/plain")]


def test_gunicorns_access_log_redacts_every_atom():
    cfg = Config()
    cfg.set("accesslog", "-")
    atoms = "%(r)s | %(q)s | %(f)s | %({x-original-url}i)s | %({query_string}e)s"
    cfg.set("access_log_format", atoms)
    logger = RedactingLogger(cfg)
    environ = {
        "REQUEST_METHOD": "GET", "RAW_URI": f"/livez?token={SECRET}", "PATH_INFO": "/livez",
        "QUERY_STRING": f"token={SECRET}", "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_REFERER": f"https://elsewhere/page?access_token={SECRET}",
    }  # fmt: skip
    headers = [("X-ORIGINAL-URL", f"/livez?key={SECRET}")]
    written = []
    logger.access_log.handlers[0].emit = lambda record: written.append(record.getMessage())

    logger.access(_Response(), headers, environ, dt.timedelta(milliseconds=3))

    assert written == [
        "GET /livez?token=REDACTED HTTP/1.1 | token=REDACTED | "
        "https://elsewhere/page?access_token=REDACTED | /livez?key=REDACTED | token=REDACTED"
    ]
