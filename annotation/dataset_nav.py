"""The dataset's navigation: its pages grouped by the job they serve (author, judge,
review, analyse, administer), each shown to the roles whose pages it opens, the page open
marked (aria-current="page"). Plain data; annotation/templatetags/datasets.py renders it.

Pages are named by URL name only (reverse()), so this module imports no evaluation code
(import-linter: annotation may not import evaluation).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse

from annotation import roles

# Who sees a link: any member, the dataset's reviewers and admins (the pages of runs and
# their results), or its admins.
MEMBERS, REVIEWERS, ADMINS = "members", "reviewers", "admins"

# (group, [(label, URL name, who)]). The Import page takes the dataset as ?dataset=.
GROUPS: tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...] = (
    ("Author", (("Queries", "dataset-detail", MEMBERS), ("Progress", "dataset-progress", ADMINS))),
    ("Judge", (
        ("Runs", "dataset-runs", REVIEWERS), ("Judge tuning", "dataset-tuning", REVIEWERS),
        ("Schedules", "dataset-schedules", ADMINS),
    )),
    ("Review", (
        ("Review", "review-queue", REVIEWERS), ("Answers", "dataset-answers", REVIEWERS),
        ("Agreement", "dataset-agreement", REVIEWERS), ("Pairwise", "dataset-pairwise", REVIEWERS),
    )),
    ("Analyse", (
        ("Analytics", "dataset-analytics", REVIEWERS),
        ("Cross-evaluation", "dataset-cross-evaluation", REVIEWERS),
        ("Alerts", "dataset-alerts", ADMINS), ("Rewards", "dataset-rewards", ADMINS),
    )),
    ("Administer", (
        ("Members", "dataset-members", ADMINS), ("Settings", "dataset-edit", ADMINS),
        ("Export", "dataset-export", ADMINS), ("Import", "dataset-import", ADMINS),
    )),
)  # fmt: skip

# The pages that show the navigation: those it links to, with the dataset's id in the URL.
PAGES = frozenset(name for _, links in GROUPS for _, name, _ in links) - {"dataset-import"}


@dataclass(frozen=True)
class Link:
    label: str
    url: str
    current: bool


@dataclass(frozen=True)
class Group:
    name: str
    links: tuple[Link, ...]


def _allowed(who: str, perms: set[str]) -> bool:
    if who == ADMINS:
        return roles.CHANGE in perms
    if who == REVIEWERS:
        return roles.CHANGE in perms or roles.REVIEW in perms
    return roles.VIEW in perms


def _url(name: str, dataset_id: int) -> str:
    if name == "dataset-import":
        return f"{reverse(name)}?dataset={dataset_id}"
    return reverse(name, args=[dataset_id])


def groups(dataset_id: int, perms: set[str], current: str) -> list[Group]:
    """The groups with at least one link the member may open; `current` is the URL name of
    the page open."""
    found = []
    for name, links in GROUPS:
        shown = tuple(
            Link(label, _url(url_name, dataset_id), url_name == current)
            for label, url_name, who in links
            if _allowed(who, perms)
        )
        if shown:
            found.append(Group(name, shown))
    return found
