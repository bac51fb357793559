"""Every route of the application, from the URL conf (pages) and the OpenAPI schema (API),
with the arguments that point it at the objects of tests/support/world.py."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from django.urls import URLPattern, URLResolver, get_resolver

from tests.support.world import World

# Not ours to test, or not routes of the application: Django's admin (staff only, its own
# permission model, opened page by page in test_admin_pages.py) and static files.
EXCLUDED_PREFIXES = ("admin/", "static/", "api/")


def page_routes() -> Iterator[tuple[str, str]]:
    """(url name, pattern) of every page route; the API comes from the schema."""

    def walk(patterns, prefix: str = "") -> Iterator[tuple[str, str]]:
        for p in patterns:
            if isinstance(p, URLResolver):
                yield from walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                yield p.name or "", prefix + str(p.pattern)

    for name, pattern in walk(get_resolver().url_patterns):
        if not pattern.startswith(EXCLUDED_PREFIXES):
            yield name, pattern


def api_operations() -> Iterator[tuple[str, str]]:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    for path, item in schema["paths"].items():
        for method in item:
            yield method.upper(), path


# What each page's path arguments point at.
PAGE_ARGS: dict[str, Callable[[World], dict]] = {}
for _name in (
    "dataset-detail", "dataset-edit", "dataset-progress", "dataset-members", "query-create",
    "review-queue", "review-assign", "review-next", "dataset-cross-evaluation",
    "dataset-overlaps-csv", "dataset-agreement", "agreement-items", "dataset-runs",
    "dataset-answers", "run-estimate", "dataset-export", "dataset-analytics", "analytics-compare",
    "analytics-complexity-csv", "analytics-complexity-svg", "analytics-criteria",
    "analytics-freshness", "dataset-side-by-side",
    "dataset-alerts", "dataset-schedules", "dataset-rewards", "dataset-pairwise",
):  # fmt: skip
    PAGE_ARGS[_name] = lambda w: {"pk": w.dataset.pk}
for _name in (
    "query-detail", "query-assign", "checklist-start", "query-overlaps",
    "query-cross-evaluation-start", "query-edit", "query-external-id",
):  # fmt: skip
    PAGE_ARGS[_name] = lambda w: {"pk": w.query.pk}
for _name in (
    "checklist-detail", "criterion-create", "checklist-submit", "checklist-reopen",
    "group-create", "checklist-scoring",
):  # fmt: skip
    PAGE_ARGS[_name] = lambda w: {"pk": w.draft.pk}
for _name in ("group-update", "group-move", "group-delete"):
    PAGE_ARGS[_name] = lambda w: {"pk": w.group.pk}
for _name in (
    "perfect-answer", "perfect-answer-preview", "perfect-answer-draft",
    "perfect-answer-draft-status",
):  # fmt: skip
    PAGE_ARGS[_name] = lambda w: {"pk": w.submitted.pk}
for _name in (
    "criterion-update", "criterion-delete", "criterion-formality", "criterion-move",
    "citation-create", "criterion-check", "criterion-group",
):  # fmt: skip
    PAGE_ARGS[_name] = lambda w: {"pk": w.criterion.pk}
for _name in (
    "answer-detail", "answer-review", "answer-review-label", "answer-review-undo",
    "answer-review-adjudicate",
):  # fmt: skip
    PAGE_ARGS[_name] = lambda w: {"pk": w.answer.pk}
for _name in ("pairwise-session", "pairwise-vote", "pairwise-undo", "pairwise-judge"):
    PAGE_ARGS[_name] = lambda w: {"pk": w.pairwise_session.pk}
PAGE_ARGS["citation-delete"] = lambda w: {"pk": w.citation.pk}
PAGE_ARGS["alert-edit"] = lambda w: {"pk": w.dataset.pk, "alert_pk": w.alert.pk}
PAGE_ARGS["alert-delete"] = lambda w: {"pk": w.dataset.pk, "alert_pk": w.alert.pk}
PAGE_ARGS["schedule-edit"] = lambda w: {"pk": w.dataset.pk, "schedule_pk": w.schedule.pk}
PAGE_ARGS["schedule-delete"] = lambda w: {"pk": w.dataset.pk, "schedule_pk": w.schedule.pk}
PAGE_ARGS["export-status"] = lambda w: {"token": w.export.token}
PAGE_ARGS["export-download"] = lambda w: {"token": w.export.token}
PAGE_ARGS["judge-edit"] = lambda w: {"pk": w.judge.pk}
PAGE_ARGS["guideline-edit"] = lambda w: {"pk": w.guideline.pk}  # the seeded Finance one
PAGE_ARGS["judge-test"] = lambda w: {"pk": w.judge.pk}
PAGE_ARGS["dataset-tuning"] = lambda w: {"pk": w.dataset.pk}
PAGE_ARGS["judge-tuning"] = lambda w: {"pk": w.dataset.pk, "judge_pk": w.llm_judge.pk}
PAGE_ARGS["judge-examples"] = lambda w: {"pk": w.dataset.pk, "judge_pk": w.llm_judge.pk}
PAGE_ARGS["panel-edit"] = lambda w: {"pk": w.panel.pk}
PAGE_ARGS["run-detail"] = lambda w: {"pk": w.run.pk}
PAGE_ARGS["run-comparison"] = lambda w: {"pk": w.run.pk}
PAGE_ARGS["run-use-judge"] = lambda w: {"pk": w.run.pk}
PAGE_ARGS["run-stability-pass"] = lambda w: {"pk": w.run.pk}
PAGE_ARGS["run-stability-pass-estimate"] = lambda w: {"pk": w.run.pk}
PAGE_ARGS["run-answer"] = lambda w: {"pk": w.run.pk, "answer_id": w.answer.pk}
PAGE_ARGS["verdict-prompt-page"] = lambda w: {"pk": w.verdict.pk}
PAGE_ARGS["run-action"] = lambda w: {"pk": w.run.pk, "action": "resume"}
PAGE_ARGS["dataset-invite"] = lambda w: {"pk": w.dataset.pk}
PAGE_ARGS["dataset-account-create"] = lambda w: {"pk": w.dataset.pk}
PAGE_ARGS["invitation-revoke"] = lambda w: {"pk": w.dataset.pk, "invitation_id": w.invitation.pk}
PAGE_ARGS["invitation-accept"] = lambda w: {"key": w.invitation_key}
PAGE_ARGS["token-revoke"] = lambda w: {"pk": w.api_token.pk}
PAGE_ARGS["dataset-member-remove"] = lambda w: {
    "pk": w.dataset.pk,
    "user_id": w.users["other_expert"].pk,
}

# What {id} means in each API path: the object the sweep requests.
API_IDS: dict[str, Callable[[World], int]] = {
    "adjudications": lambda w: w.adjudication.pk,
    "answers": lambda w: w.answer.pk,
    "checklists": lambda w: w.draft.pk,
    "criteria": lambda w: w.criterion.pk,
    "datasets": lambda w: w.dataset.pk,
    "groups": lambda w: w.group.pk,
    "guidelines": lambda w: w.guideline.pk,
    "judges": lambda w: w.judge.pk,
    "labels": lambda w: w.label.pk,
    "panels": lambda w: w.panel.pk,
    "pairwise": lambda w: w.pairwise_session.pk,
    "perfect-answers": lambda w: w.perfect_answer.pk,
    "queries": lambda w: w.query.pk,
    "review-assignments": lambda w: w.assignment.pk,
    "runs": lambda w: w.run.pk,
    "source-types": lambda w: w.source_type.pk,
    "tokens": lambda w: w.api_token.pk,
    "systems": lambda w: w.system.pk,
    "verdicts": lambda w: w.verdict.pk,
}


def api_url(path: str, world: World) -> str:
    path = path.replace("{token}", str(world.export.token))
    path = path.replace("{judge_pk}", str(world.llm_judge.pk))
    if "{id}" not in path:
        return path
    prefix = path.split("/")[2]
    return path.replace("{id}", str(API_IDS[prefix](world)))


def page_url(pattern: str, name: str, world: World) -> str:
    args = PAGE_ARGS.get(name, lambda w: {})(world)
    url = pattern
    for key, value in args.items():
        url = re.sub(rf"<(?:\w+:)?{key}>", str(value), url)
    assert "<" not in url, f"no arguments for {name}: {pattern}"
    return "/" + url
