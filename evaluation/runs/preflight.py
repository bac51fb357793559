"""Checks made before a run is started or resumed: a run that cannot work is refused with
the judge and the reason named, before anything is queued.

- Every judge of the panel can be called: not external (imported verdicts), an LLM judge
  with a base URL and a model, its API key variable set in this process's environment and
  its host at an address judges may call (evaluation/judging/keys.py) and reachable (a TCP
  connection, no request; RUNS_PREFLIGHT_CONNECT=0 turns this off where only the workers
  can reach the endpoint).
  Saving an enabled schedule runs the same judge checks on its panel (`check_panel`).
- The run has work: some answers match, and their queries have criteria to grade (or the
  panel grades 1–5).
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from django.conf import settings

from config import egress
from evaluation.answers.models import Answer
from evaluation.judges.models import Judge, Panel
from evaluation.judging import keys
from evaluation.judging.connection import key_is_set
from evaluation.judging.keys import key_variable_allowed
from evaluation.runs import snapshot
from evaluation.runs.models import Run
from evaluation.runs.snapshot import PanelSnapshot

CONNECT_TIMEOUT = 2.0  # seconds per host: a person is waiting for the page


class RunRefused(Exception):
    """The run cannot start; `problems` says why, one sentence each, for the user.
    `field` names the form field at fault (None: the run as a whole)."""

    def __init__(self, problems: list[str], *, field: str | None) -> None:
        super().__init__(" ".join(problems))
        self.problems = problems
        self.field = field


def check_judges(panel: PanelSnapshot) -> None:
    if not panel.members:
        raise RunRefused(["The panel has no judges."], field="panel")
    judges = Judge.objects.in_bulk([m.judge_id for m in panel.members])
    problems: list[str] = []
    reachable: dict[tuple[str, int], str | None] = {}
    for member in panel.members:
        judge = judges.get(member.judge_id)
        if judge is None:
            problems.append(f"Judge “{member.name}” no longer exists.")
            continue
        problems += judge_problems(judge, reachable)
    if problems:
        raise RunRefused(problems, field="panel")


def check_panel(panel: Panel) -> None:
    """The judges' checks on a panel no run has yet: a schedule is saved only if the runs
    it will start would pass them (evaluation/schedules/services.py)."""
    check_judges(snapshot.of_panel(panel))


def panel_setup_problems(panel: Panel) -> list[str]:
    """The judges' checks that need no connection (kind, base URL and model, the key's
    variable allowed and set, the host allowed): what the start form's cost estimate says
    before it estimates, so that a run the Start button would refuse is never priced."""
    members = panel.members.select_related("judge").order_by("judge__name")
    problems: list[str] = []
    for member in members:
        problems += judge_problems(member.judge, {}, connect=False)
    return problems or ([] if members else ["The panel has no judges."])


def judge_problems(
    judge: Judge, reachable: dict[tuple[str, int], str | None], *, connect: bool = True
) -> list[str]:
    name = f"Judge “{judge.name}”"
    if judge.kind == Judge.Kind.EXTERNAL:
        return [f"{name} is external (imported verdicts): it is never called, so it cannot grade."]
    if judge.kind != Judge.Kind.LLM:
        return []
    if not judge.base_url or not judge.model:
        return [f"{name} has no base URL or no model."]
    if judge.api_key_env and not key_variable_allowed(judge.api_key_env):
        # Not "not set": the variable may well be set; judges are just not allowed to read it.
        return [
            f"{name}: {judge.api_key_env} may not hold a judge key; name a JUDGE_KEY_* "
            "variable (or one JUDGE_KEY_VARIABLES lists) instead."
        ]
    if judge.api_key_env and not key_is_set(judge.api_key_env):
        return [f"{name}: its API key variable {judge.api_key_env} is not set on this server."]
    try:
        keys.endpoint_check(judge.base_url)  # before any connection, even the one below
    except egress.Unresolved:
        pass  # the connection says so, unless only the workers can resolve it
    except egress.Refused as refused:
        return [f"{name}: {keys.refusal_for_calls(refused)}"]
    if not connect or not settings.RUNS_PREFLIGHT_CONNECT:
        return []
    address = _address(judge.base_url)
    if address not in reachable:
        reachable[address] = _unreachable(*address)
    problem = reachable[address]
    return [f"{name}: cannot reach {address[0]}:{address[1]} ({problem})."] if problem else []


def _address(base_url: str) -> tuple[str, int]:
    parts = urlsplit(base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.hostname or "", port


def _unreachable(host: str, port: int) -> str | None:
    """Why a TCP connection to host:port fails, or None when it opens."""
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT):
            return None
    except socket.gaierror:
        return "the host name does not resolve"
    except TimeoutError:
        return f"no answer within {CONNECT_TIMEOUT:g} s"
    except ConnectionRefusedError:
        return "connection refused"
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def check_work(run: Run, *, answers: int, expected: int) -> None:
    if not answers:
        raise RunRefused([no_answers(run)], field=None)
    if not expected and not run.graded:
        raise RunRefused(
            ["The matching answers' queries have no submitted checklist with criteria to grade."],
            field=None,
        )


def no_answers(run: Run) -> str:
    """What the run asked for, so that a typo shows (a run label, most often)."""
    asked = [f"dataset “{run.dataset.name}”"]
    systems = list(run.systems.values_list("name", flat=True)[:5])
    if systems:
        asked.append("systems " + ", ".join(systems))
    queries = list(run.queries.values_list("pk", flat=True)[:5])
    if queries:
        asked.append("queries " + ", ".join(f"#{q}" for q in queries))
    message = f"No answers match {'; '.join(asked)}"
    if run.scope == Run.Scope.LABELLED:
        message += " with a human label or an adjudication on a scored criterion (a trial)"
    if run.answer_run_label:
        message += f"; run label “{run.answer_run_label}”"
        labels = (
            Answer.objects.filter(query__dataset=run.dataset_id, checklist__isnull=True)
            .exclude(run_label="")
            .values_list("run_label", flat=True)
            .distinct()
            .order_by("run_label")[:10]
        )
        if labels:
            message += ". Run labels in this dataset: " + ", ".join(labels)
    return message + "."
