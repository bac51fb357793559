"""bench.web's load generator sends a request again only when the server closed the
kept-alive connection it went out on without answering (gunicorn's keepalive race), and
reports every other error as before. A real socket server on 127.0.0.1, and requests as
locust uses it."""

from __future__ import annotations

import socket
import threading

import pytest
import requests
from requests.adapters import HTTPAdapter

from bench.web.resend import SentAgain

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok"


class Server:
    """Answers requests by a script per connection: "ok" answers one request, "close"
    reads one and closes without a word, "stall" reads one and never answers."""

    def __init__(self, scripts: list[list[str]]) -> None:
        self.scripts = scripts
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.requests = 0
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        for script in self.scripts:
            connection, _ = self.listener.accept()
            self.connections += 1
            with connection:
                for step in script:
                    if not connection.recv(65536):
                        break
                    self.requests += 1
                    if step == "ok":
                        connection.sendall(OK)
                    elif step == "stall":
                        threading.Event().wait(5)
                        break
                    else:
                        break  # "close": the kept-alive connection closed under the request

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"


@pytest.fixture
def session():
    SentAgain.times = 0
    with requests.Session() as s:
        s.mount("http://", HTTPAdapter(max_retries=SentAgain.once()))
        yield s


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_request_that_finds_its_kept_alive_connection_closed_is_sent_once_more(session, method):
    server = Server([["ok", "close"], ["ok"]])
    assert session.get(server.url()).status_code == 200
    answer = getattr(session, method)(server.url(), data={"label": "pass"})
    assert answer.status_code == 200 and answer.text == "ok"
    assert server.requests == 3 and server.connections == 2
    assert SentAgain.times == 1


def test_closed_twice_in_a_row_is_a_failure(session):
    server = Server([["ok", "close"], ["close"]])
    session.get(server.url())
    with pytest.raises(requests.ConnectionError, match="Remote end closed"):
        session.get(server.url())
    assert SentAgain.times == 1  # once, not more


def test_a_timeout_is_not_sent_again(session):
    server = Server([["stall"], ["ok"]])
    with pytest.raises(requests.ReadTimeout):
        session.get(server.url(), timeout=0.5)
    assert server.requests == 1 and SentAgain.times == 0


def test_a_refused_connection_is_not_sent_again(session):
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    with pytest.raises(requests.ConnectionError):
        session.get(f"http://127.0.0.1:{port}/")
    assert SentAgain.times == 0
