#!/usr/bin/env python3
"""The two commands of a fresh clone, using nothing but Python 3.11's standard library.

    python3.11 dev.py run     set up .venv, migrate, load demo data, run web server + worker
                              + scheduler (celery beat) + rewards service (port 8001)
    python3.11 dev.py test    set up .venv with the test tools, run the whole test suite
    python3.11 dev.py manage  a management command with the settings of `run` (DEBUG on)

Extra arguments after `test` go to pytest (`python3.11 dev.py test -k healthz -x`), after
`manage` to manage.py (`python3.11 dev.py manage import_kqa`).
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / "python"
HOST, PORT = os.environ.get("HOST", "127.0.0.1"), os.environ.get("PORT", "8000")
# The rewards service (docs/operations.md#the-rewards-service) beside the web server: the
# reward routes for trainers, as an ASGI server serves them in production.
# The port after the web server's by default, so that `PORT=8001` does not collide with it.
REWARDS_PORT = os.environ.get("REWARDS_PORT", str(int(PORT) + 1) if PORT.isdigit() else "8001")
REWARDS_ARGS = ["config.asgi_rewards:application", "--log-level", "warning"]
# The Celery processes `run` starts beside the web server, as `celery -A config <args>`. Beat
# is its own process, as in production (one beat; django-celery-beat's DatabaseScheduler,
# from the settings), rather than the worker's `-B`, which forks it from a worker holding
# database connections. tests/support/celery_worker.py starts beat with these same arguments.
WORKER_ARGS = ("worker", "--pool", "threads", "-c", "4", "-l", "INFO")
BEAT_ARGS = ("beat", "-l", "INFO")


def say(message: str) -> None:
    print(f"\033[1m==> {message}\033[0m", flush=True)


def ensure_python() -> None:
    if sys.version_info[:2] != (3, 11):
        sys.exit(
            f"Python 3.11 is required; this is {sys.version.split()[0]}. Run python3.11 dev.py"
        )


def installed(extra: str) -> bool:
    """Whether .venv holds the project with this extra, as pyproject.toml says now."""
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + extra.encode()).hexdigest()
    stamp = VENV / f".installed-{extra or 'runtime'}"
    return PYTHON.exists() and stamp.exists() and stamp.read_text() == digest


def ensure_venv(extra: str) -> None:
    """Create .venv and install the project; reinstall only when pyproject.toml changed."""
    if installed(extra) or (not extra and installed("dev")):  # dev holds the runtime too
        return
    if not PYTHON.exists():
        say("Creating the virtual environment in .venv")
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + extra.encode()).hexdigest()
    stamp = VENV / f".installed-{extra or 'runtime'}"
    say(f"Installing the project{' with ' + extra if extra else ''} (first run takes a minute)")
    pip = [str(PYTHON), "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "install", "--upgrade", "pip"], check=True)
    target = f".[{extra}]" if extra else "."
    subprocess.run([*pip, "install", "-e", target], check=True, cwd=ROOT)
    stamp.write_text(digest)


def manage(*args: str, env: dict[str, str]) -> None:
    subprocess.run([str(PYTHON), "manage.py", *args], check=True, cwd=ROOT, env=env)


def stop_on_sigterm() -> None:
    """SIGTERM ends `run` as Ctrl-C does, so that its worker is stopped too rather than left
    behind (a process manager or `kill` sends SIGTERM)."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def site_url(host: str, port: str) -> str:
    """The address `run` serves, for links in emails (SITE_URL). A wildcard address
    (0.0.0.0, ::) is where the server listens, not one a browser can open: the link then
    names this machine's loopback, and SITE_URL set by hand names its public name."""
    if host in ("0.0.0.0", "::", "[::]", ""):  # noqa: S104 (a comparison, not a bind)
        host = "127.0.0.1"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address in a URL
    return f"http://{host}:{port}"


def dev_env() -> dict[str, str]:
    """The environment of `run` and `manage`: DEBUG on unless set (so no SECRET_KEY is needed
    on a laptop), and judges allowed on loopback and the private network unless set, where
    a laptop's model server listens (Ollama, vLLM, `python -m loopback`). A deployment
    leaves JUDGE_ALLOW_PRIVATE_NETWORK off (docs/operations.md#which-hosts-judges-may-call).
    SITE_URL, unless set, is the address `run` serves (HOST and PORT): the links in
    invitation and alert emails then open this server, whatever PORT says."""
    return {
        **os.environ,
        "DEBUG": os.environ.get("DEBUG", "1"),
        "JUDGE_ALLOW_PRIVATE_NETWORK": os.environ.get("JUDGE_ALLOW_PRIVATE_NETWORK", "1"),
        "SITE_URL": os.environ.get("SITE_URL") or site_url(HOST, PORT),
    }


def email_note(env: dict[str, str]) -> str:
    """Where emails go: with DEBUG and no EMAIL_BACKEND of one's own, the settings write
    them as files (config/settings.py, EMAIL_FILE_PATH)."""
    if env.get("EMAIL_BACKEND") or env.get("DEBUG", "").lower() not in ("1", "true", "yes", "on"):
        return f"Emails go through {env.get('EMAIL_BACKEND') or 'SMTP'}"
    var = Path(env.get("VAR_DIR") or ROOT / "var")
    folder = env.get("EMAIL_FILE_PATH") or str(var / "emails")
    return f"Emails (invitations, alerts) are written to {folder}/, not sent"


def run() -> int:
    ensure_venv("")
    stop_on_sigterm()
    env = dev_env()
    say("Migrating the database")
    manage("migrate", "--noinput", "-v", "0", env=env)
    say("Loading demo data")
    manage("demo", env=env)
    say(f"Starting a Celery worker, the scheduler and the web server on http://{HOST}:{PORT}/")
    # Development containers often run as root. Celery then warns at every start that the
    # worker has superuser privileges; here that is known and harmless (the broker is a local
    # folder, pickle is off), so this one message is filtered, for this worker only. A
    # worker started any other way still warns.
    worker_env = {
        **env,
        "PYTHONWARNINGS": "ignore:You're running the worker with superuser privileges",
    }
    worker = subprocess.Popen(
        [str(BIN / "celery"), "-A", "config", *WORKER_ARGS], cwd=ROOT, env=worker_env
    )
    # The scheduler: without it the Schedules page's runs never start.
    beat = subprocess.Popen([str(BIN / "celery"), "-A", "config", *BEAT_ARGS], cwd=ROOT, env=env)
    rewards = subprocess.Popen(
        [str(BIN / "uvicorn"), *REWARDS_ARGS, "--host", HOST, "--port", REWARDS_PORT],
        cwd=ROOT, env=env,
    )  # fmt: skip
    server = None
    try:
        print(
            f"\n    Open http://{HOST}:{PORT}/  ·  health: http://{HOST}:{PORT}/healthz"
            f"\n    Rewards service for trainers: http://{HOST}:{REWARDS_PORT}/api/rewards/"
            f"\n    {email_note(env)}\n",
            flush=True,
        )
        # A process group of its own: the autoreloader runs the server in a child, which
        # must stop with it.
        server = subprocess.Popen(
            [str(PYTHON), "manage.py", "runserver", f"{HOST}:{PORT}"],
            cwd=ROOT,
            # Django's documented switch for its "This is a development server" banner:
            # `dev.py run` is that by name.
            env={**env, "DJANGO_RUNSERVER_HIDE_WARNING": "true"},
            start_new_session=True,
        )
        return server.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        if server is not None and server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=15)
        for process in (rewards, beat, worker):
            process.send_signal(signal.SIGTERM)
        for process in (rewards, beat, worker):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()


# manage.py commands `manage` runs without migrating first: those that read or change the
# migrations themselves (`manage migrate annotation 0010` goes back) and those that never
# open the database (`manage check` stays quick, and works with no database at all).
NO_MIGRATE_FIRST = frozenset(
    {"migrate", "makemigrations", "showmigrations", "sqlmigrate", "squashmigrations",
     "optimizemigration", "help", "check", "diffsettings", "collectstatic", "spectacular",
     "version"}
)  # fmt: skip


def manage_command(args: list[str]) -> int:
    """manage.py as `run` calls it: the project's venv, its environment (`dev_env`), the
    same SQLite file and broker folder, and the database migrated first, as `run` does. On a
    fresh clone, `dev.py manage import_kqa` (a README command) then works before `run` has
    ever made the database; the migrate is a quick no-op on one that is up to date."""
    ensure_venv("")
    env = dev_env()
    command = args[0] if args else "help"
    if command not in NO_MIGRATE_FIRST and not command.startswith("-"):
        migrated = subprocess.run(
            [str(PYTHON), "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env
        )
        if migrated.returncode:
            return migrated.returncode
    return subprocess.run([str(PYTHON), "manage.py", *args], cwd=ROOT, env=env).returncode


def test_workers(pytest_args: list[str]) -> list[str]:
    """`-n N --dist worksteal` for pytest-xdist, unless the arguments already say how many
    processes (`-n 0` runs in this one). TEST_WORKERS sets N; by default twice the cores:
    most of a test's time is spent waiting on a worker, a browser, a socket or a sleep, not
    on a core, and each process has its own test database and VAR_DIR
    (tests/support/parallel.py). worksteal hands each process a run of neighbouring tests
    (a module's shared world is built once per process) and moves the rest of a busy
    process's share to an idle one."""
    chosen = any(a.startswith(("-n", "--numprocesses")) for a in pytest_args)
    if chosen or "no:xdist" in pytest_args:
        return []
    workers = os.environ.get("TEST_WORKERS") or str(2 * (os.cpu_count() or 1))
    dist = [] if any(a.startswith("--dist") for a in pytest_args) else ["--dist", "worksteal"]
    return ["-n", workers, *dist]


def test(pytest_args: list[str]) -> int:
    ensure_venv("dev")
    where = os.environ.get("DATABASE_URL", "SQLite (set DATABASE_URL for PostgreSQL)")
    broker = os.environ.get("CELERY_BROKER_URL", "the embedded filesystem transport")
    workers = test_workers(pytest_args)
    processes = f", {workers[1]} processes" if workers else ""
    say(f"Running the tests against {where.split('@')[-1]}, broker {broker}{processes}")
    command = [str(PYTHON), "-m", "pytest", *workers, *pytest_args]
    return subprocess.run(command, cwd=ROOT).returncode


def main(argv: list[str]) -> int:
    ensure_python()
    command, rest = (argv[0], argv[1:]) if argv else ("", [])
    if command == "run":
        return run()
    if command == "test":
        return test(rest)
    if command == "manage":
        return manage_command(rest)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
