"""gunicorn settings for the web application (docs/operations.md, "Running the web
application"):

    gunicorn -c python:config.gunicorn config.wsgi --bind 0.0.0.0:8000 --workers 4

Options given on the command line win over these.
"""

from __future__ import annotations

from gunicorn.glogging import Logger

from config.logs import redact_secrets

# Two threads per worker (gunicorn's gthread workers): a page spends about 40% of its time
# waiting on PostgreSQL, and a second thread serves another request meanwhile. Measured
# with 20 users labelling and reading on two cores, four workers of two threads came within
# the targets (every page in one run, all but one at 1.15 in another) where four or eight
# single-threaded workers did not, and four threads each did worse than two
# (docs/benchmarks-history.md, "Two threads per worker").
threads = 2


# Each worker compiles the templates and freezes its start-up objects once the application
# is loaded (config/warm.py), before it accepts a request.
def post_worker_init(worker) -> None:
    from config.warm import ready_worker

    frozen = ready_worker()
    worker.log.info("worker ready: templates compiled, %d start-up objects frozen", frozen)
    # The first worker of a start (age 1; a worker replaced later has a higher age) queues
    # the warm-up of every kept figure, so that a deploy's first readers find them counted
    # (evaluation.analytics.warmup). One per start, not one per worker; not in the master,
    # which would share its broker connection with the workers it forks.
    if worker.age == 1:
        from config.warm import queue_figures_warm_up

        queue_figures_warm_up()


class RedactingLogger(Logger):
    """gunicorn's logger with credential-like query parameters (`?token=…`) redacted in the
    access log (config/logs.py): in every atom a format may use, the request line `%(r)s`,
    the query string `%(q)s`, the referrer `%(f)s` and the headers and environment."""

    def atoms(self, resp, req, environ, request_time) -> dict:
        atoms = super().atoms(resp, req, environ, request_time)
        return {
            name: redact_secrets(value) if isinstance(value, str) else value
            for name, value in atoms.items()
        }


logger_class = RedactingLogger
