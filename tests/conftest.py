"""Fixtures shared by every test.

People: `owner` (admin of `dataset`), `collaborator` (an expert on it) and `outsider` (a
user with no access). Every endpoint test uses all three. Real components: `celery_worker`
is a worker process on the configured broker (`start_worker` starts a test's own;
`start_beat` a celery beat as `dev.py run` starts it);
`loopback_openai` is an OpenAI-compatible server on 127.0.0.1 (see docs/loopback.md). A test
that uses a worker fixture is marked `worker` here, so `-m "not worker"` leaves it out.

Each folder of tests/evaluation/ has a conftest.py of its own for what its tests share;
rows are made by tests/factories.py (PanelFactory among them) and
tests/support/builders.py (checklisted_query, finished_run).
"""

from __future__ import annotations

import os

import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.db import connection
from rest_framework.test import APIClient

from annotation import roles, services
from tests.factories import PASSWORD, PanelFactory, QueryFactory, UserFactory, offline_judge
from tests.support import xdist_databases
from tests.support.celery_worker import BeatProcess, WorkerProcess, database_url

# The tests' judges are loopback servers (tests/loopback, LoopbackOpenAI), which judges may
# call only when the operator says so: the switch is set here as an operator would set it,
# for this process and the workers it starts (tests/support/celery_worker.py sets it too).
# A test of the rule itself turns it off with the `settings` fixture.
os.environ["JUDGE_ALLOW_PRIVATE_NETWORK"] = "1"
settings.JUDGE_ALLOW_PRIVATE_NETWORK = True


@pytest.fixture(scope="session")
def django_db_keepdb(request) -> bool:
    """pytest-django's (`--reuse-db`); and under xdist, where each worker's database is made
    already (below), it is kept for pytest-django, which then migrates nothing."""
    return request.config.getvalue("reuse_db") or bool(xdist_databases.WORKER)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    request, django_db_modify_db_settings_parallel_suffix, django_db_blocker
):
    """Under xdist, each worker's test database is a copy of one migrated once for the run
    (tests/support/xdist_databases.py), dropped at the worker's end."""
    if not xdist_databases.WORKER or request.config.getvalue("reuse_db"):
        yield
        return
    with django_db_blocker.unblock():
        xdist_databases.copy_template_for_worker(connection)
    yield
    with django_db_blocker.unblock():
        xdist_databases.drop_worker_database(connection)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The xdist controller drops the run's template database once every worker is done."""
    config = session.config
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return
    if config.getvalue("reuse_db"):
        return
    xdist_databases.drop_template(connection)


@pytest.fixture(autouse=True)
def _fresh_cache():
    """The local-memory cache lives as long as the process: /healthz results and the like
    must not leak from one test into the next."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def password() -> str:
    return PASSWORD


@pytest.fixture
def owner(db):
    user = UserFactory(username="owner")
    user.groups.add(Group.objects.get(name=roles.Group.ADMIN.value))
    return user


@pytest.fixture
def collaborator(db):
    user = UserFactory(username="collaborator")
    user.groups.add(Group.objects.get(name=roles.Group.EXPERT.value))
    return user


@pytest.fixture
def outsider(db):
    user = UserFactory(username="outsider")
    user.groups.add(Group.objects.get(name=roles.Group.EXPERT.value))
    return user


@pytest.fixture
def reviewer(db):
    user = UserFactory(username="reviewer")
    user.groups.add(Group.objects.get(name=roles.Group.REVIEWER.value))
    return user


@pytest.fixture
def dataset(owner, collaborator):
    dataset = services.dataset_create(name="Owner dataset", by=owner)
    services.dataset_set_role(dataset=dataset, user=collaborator, role=roles.DatasetRole.EXPERT)
    return dataset


@pytest.fixture
def reviewed_dataset(dataset, reviewer):
    """`dataset` with `reviewer` as its reviewer (labels and adjudicates)."""
    services.dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    return dataset


@pytest.fixture
def query(dataset):
    return QueryFactory(dataset=dataset)


@pytest.fixture
def owner_client(client, owner):
    """The test client, logged in as `owner`."""
    client.force_login(owner)
    return client


@pytest.fixture
def offline_panel(db):
    """ "Offline panel", of one no-LLM judge "Offline": its runs call no endpoint."""
    return PanelFactory(name="Offline panel", judges=[offline_judge()])


def _api_client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def owner_api(owner) -> APIClient:
    return _api_client(owner)


@pytest.fixture
def collaborator_api(collaborator) -> APIClient:
    return _api_client(collaborator)


@pytest.fixture
def outsider_api(outsider) -> APIClient:
    return _api_client(outsider)


@pytest.fixture
def reviewer_api(reviewer) -> APIClient:
    return _api_client(reviewer)


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker):
    """One worker process for the session, consuming this session's own queue."""
    with django_db_blocker.unblock():
        url = database_url(connection.settings_dict)
    worker = WorkerProcess(
        queue=settings.CELERY_TASK_DEFAULT_QUEUE,
        database=url,
        concurrency=8,  # judging tasks mostly wait on the network
        env={
            "JUDGE_RETRY_BASE_DELAY": "0.05",  # tests inject faults; keep backoffs short
            # The regression alert tests' webhook receiver listens on loopback, which
            # webhooks may reach only when the operator lists it.
            "ALERT_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
            # Its judges are loopback servers, which the operator allows explicitly.
            "JUDGE_ALLOW_PRIVATE_NETWORK": "1",
        },
    ).start()
    SESSION_WORKERS.append(worker)
    yield worker
    worker.stop()


# The session's worker once a test has started it: tests that queue tasks without asking
# for a worker (a run started by a schedule's tick) settle it before their database is
# emptied (`settle_session_worker`), or its task deadlocks the flush.
SESSION_WORKERS: list[WorkerProcess] = []


@pytest.fixture
def settle_session_worker():
    """After the test, the session's worker (if one runs) has no task of this test left."""
    yield
    for worker in SESSION_WORKERS:
        if worker.alive:
            worker.settle()


@pytest.fixture
def celery_worker(transactional_db, celery_worker_process):
    """A live worker for one test. The test's data is committed so the worker can read it."""
    if not celery_worker_process.alive:
        pytest.fail(f"The Celery worker died:\n{celery_worker_process.log()[-4000:]}")
    yield celery_worker_process
    celery_worker_process.settle()  # before the database is emptied (transactional_db)


@pytest.fixture
def start_worker(transactional_db):
    """Starts workers of the test's own, `start_worker(queue=..., concurrency=2, env={...})`,
    on the test database, and stops them after the test: for tests that kill a worker or lose
    its messages, which the shared `celery_worker` must survive."""
    url = database_url(connection.settings_dict)
    started: list[WorkerProcess] = []

    def start(*, queue: str, concurrency: int = 2, env: dict | None = None) -> WorkerProcess:
        worker = WorkerProcess(queue=queue, database=url, concurrency=concurrency, env=env)
        started.append(worker)
        return worker.start()

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def start_beat(transactional_db):
    """Starts celery beat as `dev.py run` does, `start_beat(env={...})`, on the test database,
    sending to this session's queue (where `celery_worker` takes its tasks), and stops it
    after the test."""
    url = database_url(connection.settings_dict)
    started: list[BeatProcess] = []

    def start(*, env: dict | None = None) -> BeatProcess:
        beat = BeatProcess(queue=settings.CELERY_TASK_DEFAULT_QUEUE, database=url, env=env)
        started.append(beat)
        return beat.start()

    yield start
    for beat in started:
        beat.stop()


# The fixtures that start a worker process; a test that uses one is marked `worker`.
WORKER_FIXTURES = frozenset({"celery_worker_process", "start_worker", "start_beat"})


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks `worker` every test that starts a worker process, through either fixture (also
    through a fixture of its own that asks for one), so that `-m "not worker"` is a loop
    without them and no module has to remember the marker."""
    for item in items:
        if WORKER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.worker)


@pytest.fixture
def loopback_openai():
    """An OpenAI-compatible server on 127.0.0.1 for the real openai client."""
    from loopback import LoopbackOpenAI

    with LoopbackOpenAI() as server:
        yield server


def pytest_report_header(config) -> list[str]:
    db = os.environ.get("DATABASE_URL", "sqlite (default)").split("@")[-1]
    broker = os.environ.get("CELERY_BROKER_URL", "filesystem:// (default)").split("@")[-1]
    return [f"database: {db}", f"celery broker: {broker}"]


@pytest.fixture
def eager_refresh():
    """Celery tasks run inside `apply_async` (CELERY_TASK_ALWAYS_EAGER), as in a demo
    without a worker: an analytics page that finds its figures stale or missing has them
    recomputed in the request. For tests about what the pages show; stale-while-revalidate
    itself is tested with a real worker (tests/evaluation/analytics/test_refresh.py)."""
    from celery import current_app

    before = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    yield
    current_app.conf.task_always_eager = before
