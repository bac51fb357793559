"""The ready-made reward request of a dataset's Rewards page: a curl command and a Python
snippet that answer 200 when copied, with the dataset's id, a query that can be scored (its
real external id) and a panel that can grade. The token is the one thing left to fill in:
both read it from the CWB_TOKEN environment variable (made on the account page)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db.models import Count, Q

from annotation.models import Dataset, Query
from evaluation.judges.models import Judge, Panel
from evaluation.runs.models import Run
from evaluation.runs.scope import scored_criteria

TOKEN_VARIABLE = "CWB_TOKEN"  # noqa: S105 (the name of a variable, not a secret)
COMPLETION = "Write here the completion your policy sampled for this query."


@dataclass(frozen=True)
class RewardExample:
    url: str
    dataset_id: int
    query_external_id: str
    panel: Panel
    other_panels: tuple[Panel, ...]

    @property
    def body(self) -> dict:
        return {
            "dataset": self.dataset_id,
            "panel": self.panel.pk,
            "items": [{"query": self.query_external_id, "completion": COMPLETION}],
        }

    @property
    def curl(self) -> str:
        body = json.dumps(self.body, ensure_ascii=False)
        return (
            f"curl -sS --fail-with-body -X POST {self.url} \\\n"
            f'  -H "Authorization: Token ${TOKEN_VARIABLE}" '
            '-H "Content-Type: application/json" \\\n'
            f"  -d '{_shell_quoted(body)}'"
        )

    @property
    def python(self) -> str:
        body = json.dumps(self.body, ensure_ascii=False, indent=4)
        return (
            "import json\n"
            "import os\n"
            "import urllib.request\n"
            "\n"
            f"body = {body}\n"
            "request = urllib.request.Request(\n"
            f"    {self.url!r},\n"
            '    data=json.dumps(body).encode("utf-8"),\n'
            "    headers={\n"
            f'        "Authorization": "Token " + os.environ["{TOKEN_VARIABLE}"],\n'
            '        "Content-Type": "application/json",\n'
            "    },\n"
            ")\n"
            "with urllib.request.urlopen(request) as response:\n"
            "    print(json.dumps(json.load(response), indent=2))\n"
        )


def _shell_quoted(text: str) -> str:
    """Text to put between single quotes in a POSIX shell."""
    return text.replace("'", "'\"'\"'")


def usable_panels(dataset: Dataset) -> list[Panel]:
    """Panels a reward request can name: with judges, none of them external (imported
    verdicts, never called; evaluation.rewards.services refuses those). The panel of the
    dataset's latest run first, then by name. Two queries."""
    panels = list(
        Panel.objects.annotate(
            member_count=Count("members"),
            external_count=Count("members", filter=Q(members__judge__kind=Judge.Kind.EXTERNAL)),
        )
        .filter(member_count__gt=0, external_count=0)
        .order_by("name")
    )
    latest = (
        Run.objects.filter(dataset=dataset, panel__in=[p.pk for p in panels])
        .order_by("-created_at", "-pk")
        .values_list("panel_id", flat=True)
        .first()
    )
    return sorted(panels, key=lambda p: p.pk != latest)


def scorable_query(dataset: Dataset) -> str | None:
    """The external id of the dataset's first query with criteria a reward is scored on."""
    return (
        Query.objects.filter(
            dataset=dataset, pk__in=scored_criteria().values("checklist__query_id")
        )
        .order_by("pk")
        .values_list("external_id", flat=True)
        .first()
    )


def reward_example(dataset: Dataset, url: str) -> RewardExample | str:
    """The example request, or why there is none yet (a sentence for the page)."""
    query = scorable_query(dataset)
    if query is None:
        return "No query of this dataset has a submitted checklist with criteria yet."
    panels = usable_panels(dataset)
    if not panels:
        return "No panel can grade rewards yet: make a panel of judges on the Judges page."
    return RewardExample(url, dataset.pk, query, panels[0], tuple(panels[1:]))
