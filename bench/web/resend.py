"""The load generator's one retry: a request sent again when the server closed the kept-alive
connection it went out on before answering, as browsers do.

gunicorn closes a connection idle for its `keepalive` seconds (2). urllib3 drops a pooled
connection it finds closed before it sends, but a request that leaves at the very moment the
server closes it finds it gone ("Remote end closed connection without response"): the server
never read it, so it is no failure of the page. A timeout, a refused connection or any other
error is not sent again, and a second close in a row is a failure. Kept apart from the
locustfile (which imports gevent and patches the standard library) so that it can be tested.
"""

from __future__ import annotations

import http.client

from urllib3.exceptions import ProtocolError
from urllib3.util.retry import Retry

CLOSED = (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected)


class SentAgain(Retry):
    times = 0  # requests sent again in this process, for the report

    @classmethod
    def once(cls) -> SentAgain:
        return cls(total=1, connect=0, read=1, status=0, other=0, redirect=False,
                   allowed_methods=None)  # fmt: skip

    def increment(self, method=None, url=None, response=None, error=None, *args, **kwargs):
        closed = isinstance(error, ProtocolError) and isinstance(error.args[-1], CLOSED)
        if not closed:  # as requests does without retries
            return Retry(0, read=False).increment(method, url, response, error, *args, **kwargs)
        retry = super().increment(method, url, response, error, *args, **kwargs)
        SentAgain.times += 1
        return retry
