"""A loopback HTTP server that stands for a regression alert's webhook receiver: it keeps
every request (method, path, headers, body) and answers `status`, with a `Location` when
given one (a redirect). `first` lists the answers to the first requests, in order, before
`status` (a receiver down for a while: `first=(503, 503)`)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class WebhookReceiver:
    def __init__(self, status: int = 204, location: str = "", first: Sequence[int] = ()) -> None:
        received = self.received = []
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with lock:
                    received.append((self.command, self.path, dict(self.headers), body))
                    answer = first[len(received) - 1] if len(received) <= len(first) else status
                self.send_response(answer)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_GET = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> WebhookReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
