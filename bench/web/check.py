"""`--check`: after the load, do the figures served now equal a recount?

For the dataset: (a) the agreement figures as the API serves them now (the kept counts,
moved label by label during the load) against the same figures counted afresh, with the
dataset's kept agreement rows deleted; (b) the labelling and disagreement queues as their
selectors return them now against the same after deleting their kept headers and rows, so
that they are ordered afresh. The recounts run in one transaction that is rolled back:
nothing kept changes; they are counted in place, whatever the cold rule says. Only public
selectors and models are used: iterating a queue gives items with `key` and `facts`.
"""

from __future__ import annotations

import math

AGREEMENT = "agreement"
QUEUES = ("labelling-queue", "disagreement-queue")
EXAMPLES = 5


def _agreement(dataset) -> dict:
    from evaluation.agreement.selectors import agreement_report
    from evaluation.agreement.serialize import report_data

    return report_data(agreement_report(dataset))


def _queues(dataset, user) -> tuple[dict[str, list], int]:
    """Each queue's items in order, as [key, facts]: the labels of a labelling item, the
    human labels of a disagreement item; and how many disagreements are adjudicated."""
    from evaluation.review.selectors import disagreement_queue, labelling_queue

    labelling = [[list(i.key), i.facts.labels] for i in labelling_queue(dataset, user)]
    disagreements = disagreement_queue(dataset, user)
    items = [[list(i.key), sorted(i.facts.human_labels)] for i in disagreements.items]
    return {"labelling": labelling, "disagreement": items}, disagreements.adjudicated


def _leaves(value, path: str = ""):
    if isinstance(value, dict):
        for key in sorted(value):
            yield from _leaves(value[key], f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        yield f"{path}[]", len(value)
        for n, item in enumerate(value):
            yield from _leaves(item, f"{path}[{n}]")
    else:
        yield path, value


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _compare_figures(now: dict, fresh: dict) -> dict:
    """Leaf by leaf (lists also by length)."""
    a, b = dict(_leaves(now)), dict(_leaves(fresh))
    keys = sorted(a.keys() | b.keys())
    differ = [k for k in keys if k not in a or k not in b or not _same(a[k], b[k])]
    return {
        "compared": len(keys),
        "differences": len(differ),
        "examples": [
            f"{k}: now {a.get(k, '-')!r}, recounted {b.get(k, '-')!r}" for k in differ[:EXAMPLES]
        ],
    }


def _compare_queue(now: list, fresh: list) -> dict:
    """Position by position: an item missing, added, moved or with other facts differs."""
    differ = [n for n in range(max(len(now), len(fresh)))
              if n >= len(now) or n >= len(fresh) or now[n] != fresh[n]]  # fmt: skip

    def at(items: list, n: int) -> str:
        return repr(items[n]) if n < len(items) else "-"

    return {
        "compared": max(len(now), len(fresh)),
        "items_now": len(now),
        "items_recounted": len(fresh),
        "differences": len(differ),
        "examples": [
            f"#{n + 1}: now {at(now, n)}, recounted {at(fresh, n)}" for n in differ[:EXAMPLES]
        ],
    }


def check(dataset_id: int, username: str) -> dict:
    """{"agreement": ..., "labelling": ..., "disagreement": ..., ...}: each with the
    number of differences (0 expected) and a few examples."""
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from annotation.models import Dataset
    from evaluation.kept import cold
    from evaluation.kept.models import KeptFigure, KeptQueueRow

    dataset = Dataset.objects.get(pk=dataset_id)
    user = get_user_model().objects.get(username=username)
    served = _agreement(dataset)
    queues_now, adjudicated_now = _queues(dataset, user)
    # Recounted here, not queued to a worker (the cold rule, evaluation.kept.cold): the
    # recount is rolled back, and a refresh queued from it would count for nothing.
    with transaction.atomic(), cold.counting():
        KeptFigure.objects.filter(dataset=dataset, kind=AGREEMENT).delete()
        recounted = _agreement(dataset)
        headers = KeptFigure.objects.filter(dataset=dataset, kind__in=QUEUES)
        KeptQueueRow.objects.filter(kept_id__in=headers.values("pk")).delete()
        headers.delete()
        queues_fresh, adjudicated_fresh = _queues(dataset, user)
        transaction.set_rollback(True)
    result = {"agreement": _compare_figures(served, recounted)}
    for name in queues_now:
        result[name] = _compare_queue(queues_now[name], queues_fresh[name])
    result["disagreement adjudicated"] = {
        "compared": 1, "now": adjudicated_now, "recounted": adjudicated_fresh,
        "differences": int(adjudicated_now != adjudicated_fresh), "examples": [],
    }  # fmt: skip
    return result
