"""gunicorn settings for the web application (docs/operations.md, "Running the web
application"):

    gunicorn -c python:config.gunicorn config.wsgi --bind 0.0.0.0:8000 --workers 8

Options given on the command line win over these.
"""

from __future__ import annotations

# Each worker compiles the templates and freezes its start-up objects once the application
# is loaded (config/warm.py), before it accepts a request.


def post_worker_init(worker) -> None:
    from config.warm import ready_worker

    frozen = ready_worker()
    worker.log.info("worker ready: templates compiled, %d start-up objects frozen", frozen)
