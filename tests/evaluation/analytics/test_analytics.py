"""Analytics figures on a fixture with known verdicts and labels, each equal to an
independent computation from the raw data: bucket means, the bootstrap interval (fixed
seed), PPI++ (ppi_py), the paired test (scipy), criterion health."""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict

import numpy as np
import pytest
from scipy.stats import binomtest

from evaluation.analytics import selectors as sel
from evaluation.analytics import summaries
from evaluation.metrics import analytics as am
from evaluation.runs.scores import run_report
from tests.evaluation.analytics.known import answer_shares, build_known, human, panel


def numpy_cluster_bootstrap(by_cluster: dict, resamples: int, seed: int):
    keys = sorted(by_cluster, key=str)
    sums = np.array([sum(by_cluster[k]) for k in keys])
    counts = np.array([len(by_cluster[k]) for k in keys])
    draws = np.random.default_rng(seed).integers(0, len(keys), size=(resamples, len(keys)))
    means = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    return np.quantile(means, 0.025), np.quantile(means, 0.975)


def test_overall_scores_and_intervals(known):
    data = sel.load_run(known.run)
    cells = {
        c.system_id: c for c in summaries.system_scores(data, resamples=400) if c.group == "all"
    }
    shares = answer_shares(known)
    report = {s.system_id: s for s in run_report(known.run).systems}
    for system_id in known.systems:
        by_query = defaultdict(list)
        for answer, share in shares.items():
            query, system = known.answers[answer]
            if system == system_id:
                by_query[query].append(share)
        values = [v for vs in by_query.values() for v in vs]
        cell = cells[system_id].estimate
        assert cell.mean == pytest.approx(np.mean(values))
        assert cell.mean == pytest.approx(report[system_id].score)  # the run page agrees
        low, high = numpy_cluster_bootstrap(by_query, 400, am.BOOTSTRAP_SEED)
        assert (cell.low, cell.high) == (pytest.approx(low), pytest.approx(high))
        assert (cell.n, cell.clusters) == (6, 6)


def test_bucket_means(known):
    data = sel.load_run(known.run)
    cells = summaries.system_scores(data, resamples=50)
    got = {(c.system_id, c.value): c.estimate.mean for c in cells if c.group == "bucket"}
    shares = answer_shares(known)
    # By hand: sizes 8, 12, 12, 17, 22, 36 fall in <10, 10–14 (two), 15–19, 20–24, ≥35.
    bucket_of_size = {8: "lt10", 12: "10-14", 17: "15-19", 22: "20-24", 36: "ge35"}
    expected = defaultdict(list)
    for answer, share in shares.items():
        query, system = known.answers[answer]
        size = next(n for q, n in known.checklists.values() if q == query)
        expected[system, bucket_of_size[size]].append(share)
    assert set(got) == set(expected)
    for key, values in expected.items():
        assert got[key] == pytest.approx(sum(values) / len(values))
    assert data.checklist_size and sorted(data.checklist_size.values()) == [8, 12, 12, 17, 22, 36]


def test_scores_by_kind_and_category(known):
    data = sel.load_run(known.run)
    cells = {(c.system_id, c.group, c.value): c.estimate for c in summaries.system_scores(data)}
    for kind in ("fact", "methodology", "format"):
        shares = answer_shares(known, keep=lambda c, kind=kind: known.criteria[c][1] == kind)
        for system_id in known.systems:
            values = [s for a, s in shares.items() if known.answers[a][1] == system_id]
            assert cells[system_id, "kind", kind].mean == pytest.approx(np.mean(values))
    shares = answer_shares(known)
    for system_id in known.systems:
        for category in set(known.categories.values()):
            values = [
                s for a, s in shares.items()
                if known.answers[a][1] == system_id
                and known.categories[known.answers[a][0]] == category
            ]  # fmt: skip
            assert cells[system_id, "category", category].mean == pytest.approx(np.mean(values))


def test_ppi_equals_ppi_py(known, reviewed_dataset):
    ppi_py = pytest.importorskip("ppi_py")
    # The random policy: the labelled answers are a simple random draw, no weights.
    reviewed_dataset.label_policy = "random"
    reviewed_dataset.save()
    data = sel.load_run(known.run)
    calibrated = {c.system_id: c for c in sel.calibrated_scores(data, resamples=200)}
    for system_id in known.systems:
        y, yhat, yhat_u, judge_all = [], [], [], []
        for key, votes in known.votes.items():
            if known.answers[key[0]][1] != system_id:
                continue
            verdict = panel(votes)
            if verdict == "undecided":
                continue
            prediction = float(verdict == "pass")
            judge_all.append(prediction)
            reference = human(known, key)
            if reference is None:
                yhat_u.append(prediction)
            else:
                y.append(float(reference == "pass"))
                yhat.append(prediction)
        c = calibrated[system_id]
        point = ppi_py.ppi_mean_pointestimate(np.array(y), np.array(yhat), np.array(yhat_u))
        assert c.ppi.mean == pytest.approx(float(np.squeeze(point)), abs=1e-12)
        assert (c.ppi.labelled, c.ppi.unlabelled) == (len(y), len(yhat_u))
        assert c.judge.mean == pytest.approx(np.mean(judge_all))
        assert c.human.mean == pytest.approx(np.mean(y))
        assert c.ppi.low < c.ppi.mean < c.ppi.high


def _priority_order(known, dataset_id: int) -> tuple[list[int], dict[int, float]]:
    """Every judged answer in the "least certain" draw's order, and its size, computed here
    from the raw votes and the design's definition (docs/metrics.md)."""
    totals: dict[int, list[float]] = defaultdict(lambda: [0.0, 0])
    for (answer, _criterion), votes in known.votes.items():
        p, f = votes.count("pass"), votes.count("fail")
        if p + f:
            totals[answer][0] += 1 - abs(p - f) / (p + f)
            totals[answer][1] += 1
    size = {a: math.sqrt(n * (u / n / 2 + 0.05)) for a, (u, n) in totals.items()}

    def priority(answer):
        digest = hashlib.sha256(f"{dataset_id}:{answer}".encode()).digest()
        return size[answer] / ((int.from_bytes(digest[:8], "big") + 0.5) / 2**64)

    order = sorted(size, key=lambda a: -priority(a))
    return order, {a: priority(a) for a in order} | {"size": size}  # type: ignore[operator]


def test_ppi_under_the_least_certain_policy_weighs_each_drawn_answer(known, reviewed_dataset):
    """Reviewers labelled the first five answers of the least-certain queue, and one more
    out of order: PPI++ weighs the five by the inverse of their chance (τ / size, at least
    1) and leaves the sixth out; held to ppi_py with weights, and the clustered interval to
    a numpy bootstrap."""
    from evaluation.labels.models import HumanLabel

    ppi_py = pytest.importorskip("ppi_py")
    assert reviewed_dataset.label_policy == "uncertain"  # the default
    order, facts = _priority_order(known, reviewed_dataset.pk)
    size = facts.pop("size")
    drawn, outside = order[:5], order[8]
    HumanLabel.objects.exclude(answer_id__in=[*drawn, outside]).delete()
    known.labels = {k: v for k, v in known.labels.items() if k[0] in {*drawn, outside}}
    assert all(any(k[0] == a for k in known.labels) for a in [*drawn, outside])
    tau = facts[order[5]]  # the first answer not labelled
    weight = {a: max(1.0, tau / size[a]) for a in drawn}
    assert len(set(weight.values())) > 1  # unequal chances: the weights matter here

    calibrated = {c.system_id: c for c in sel.calibrated_scores(sel.load_run(known.run))}
    checked = 0
    for system_id in known.systems:
        y, yhat, w, population, rows = [], [], [], [], defaultdict(lambda: [0.0, 0.0, 0.0, 0])
        for key, votes in known.votes.items():
            query, system = known.answers[key[0]]
            verdict = panel(votes)
            if system != system_id or verdict == "undecided":
                continue
            prediction = float(verdict == "pass")
            population.append(prediction)
            rows[query][2] += prediction
            rows[query][3] += 1
            reference = human(known, key)
            if key[0] in weight and reference is not None:
                y.append(float(reference == "pass"))
                yhat.append(prediction)
                w.append(weight[key[0]])
                rows[query][0] += weight[key[0]] * y[-1]  # λ applied below
                rows[query][1] += weight[key[0]]
                rows[query].append((weight[key[0]], prediction))
        c = calibrated[system_id]
        if not y:
            # The drawn head holds none of this system's answers (the draw hashes the
            # answers' ids, which depend on what ran before): no estimate, not a crash.
            assert c.ppi.mean is None and c.ppi.labelled == 0
            continue
        checked += 1
        y_, yhat_, w_, pop_ = map(np.array, (y, yhat, w, population))
        point = ppi_py.ppi_mean_pointestimate(y_, yhat_, pop_, w=w_)
        assert c.ppi.mean == pytest.approx(float(np.squeeze(point)), abs=1e-12)
        fixed = ppi_py.ppi_mean_pointestimate(y_, yhat_, pop_, lam=c.ppi.lam, w=w_)
        assert c.ppi.mean == pytest.approx(float(np.squeeze(fixed)), abs=1e-12)
        assert c.ppi.labelled == len(y) and "design weights" in c.ppi.method
        # The clustered interval: queries resampled, λ held, per-query sums.
        keys = sorted(rows, key=str)
        rect = np.array(
            [rows[k][0] - c.ppi.lam * sum(wt * h for wt, h in rows[k][4:]) for k in keys]
        )
        wsum, imp, count = (np.array([rows[k][i] for k in keys]) for i in (1, 2, 3))
        draws = np.random.default_rng(am.BOOTSTRAP_SEED).integers(
            0, len(keys), size=(summaries.PAGE_RESAMPLES, len(keys))
        )
        ok = wsum[draws].sum(axis=1) > 0
        estimates = (
            c.ppi.lam * imp[draws].sum(axis=1) / count[draws].sum(axis=1)
            + rect[draws].sum(axis=1) / np.where(ok, wsum[draws].sum(axis=1), 1)
        )[ok]
        low, high = np.quantile(estimates, [0.025, 0.975])
        assert (c.ppi.low, c.ppi.high) == (pytest.approx(low), pytest.approx(high))
        # Human only: every labelled item's reference, drawn or not.
        everyone = [
            float(human(known, k) == "pass") for k in known.votes
            if known.answers[k[0]][1] == system_id and human(known, k) is not None
            and panel(known.votes[k]) != "undecided"
        ]  # fmt: skip
        assert c.human.mean == pytest.approx(np.mean(everyone))
    assert checked  # the five drawn answers carry labels: some system has an estimate
    system_of_outside = known.answers[outside][1]
    assert "left out" in calibrated[system_of_outside].ppi.method


def test_criterion_health_finds_the_criterion_nobody_passes(known):
    data = sel.load_run(known.run)
    health = {h.criterion: h for h in summaries.criterion_health(data)}
    firsts = {crits[0].pk for _, _, crits in known.plan}
    for criterion in firsts:
        if any(key[1] == criterion and adj == "pass" for key, adj in known.adjudications.items()):
            continue
        assert "never passed" in health[criterion].flags
    flagged = {c for c, h in health.items() if "never passed" in h.flags}
    assert flagged <= firsts | {
        c for c in health if health[c].items.passed == 0
    }  # only criteria really never passed


def test_complexity_curve_carries_the_human_line(known):
    from evaluation.metrics.overlap import Interval

    data = sel.load_run(known.run)
    line = Interval(0.29, 0.2, 0.38, 10, 5, "test")
    curve = sel.complexity_curve(data, summaries.system_scores(data, resamples=20), human=line)
    assert curve.human.mean == 0.29
    assert curve.buckets[0].key == "lt10"
    assert len(curve.lines) == 2 and all(len(line.points) == 7 for line in curve.lines)
    assert curve.lines[0].points[5].estimate.mean is None  # 30–34: no checklist


def test_run_comparison_paired_test(reviewed_dataset):
    first = build_known(reviewed_dataset, seed=1, run_name="Before")
    second = build_known(
        reviewed_dataset, seed=2, run_name="After", queries=first.plan,
        skill={"Alpha": 0.4, "Beta": 0.45},
    )  # fmt: skip
    alpha = next(pk for pk, name in first.systems.items() if name == "Alpha")
    a, b = sel.load_run(first.run), sel.load_run(second.run)
    comparison = summaries.compare_runs(a, b, system_a=alpha, system_b=alpha, resamples=500)
    sa, sb = answer_shares(first), answer_shares(second)
    by_query_a = {first.answers[x][0]: s for x, s in sa.items() if first.answers[x][1] == alpha}
    by_query_b = {second.answers[x][0]: s for x, s in sb.items() if second.answers[x][1] == alpha}
    diffs = [by_query_b[q] - by_query_a[q] for q in sorted(by_query_a)]
    t = comparison.test
    assert t.n == 6
    assert t.difference == pytest.approx(np.mean(diffs))
    gains, losses = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    assert (t.gains, t.losses) == (gains, losses)
    assert t.sign_p == pytest.approx(binomtest(gains, gains + losses, 0.5).pvalue)
    assert [d.difference for d in comparison.deltas] == pytest.approx(sorted(diffs))
    regressions = comparison.regressions()
    assert all(d.difference < 0 for d in regressions)
    assert regressions == sorted(regressions, key=lambda d: d.difference)


def test_panel_calibration_equals_sklearn(known):
    from sklearn.metrics import cohen_kappa_score

    data = sel.load_run(known.run)
    options = {(o.judges, o.method): o for o in sel.panel_calibration(data)}
    labelled = [k for k in known.votes if human(known, k) is not None]
    for n, judge in enumerate(("j1", "j2", "j3")):
        pairs = [
            (known.votes[k][n], human(known, k))
            for k in labelled
            if known.votes[k][n] in ("pass", "fail")
        ]
        option = options[(judge,), "single judge"]
        assert option.agreement.n == len(pairs)
        assert option.kappa == pytest.approx(cohen_kappa_score(*zip(*pairs, strict=True)))
        assert option.cost == 0  # external judges call no LLM
    trio = options[("j1", "j2", "j3"), "majority"]
    pairs = [(panel(known.votes[k]), human(known, k)) for k in labelled]
    pairs = [p for p in pairs if p[0] != "undecided"]
    assert trio.agreement.n == len(pairs)
    assert trio.kappa == pytest.approx(cohen_kappa_score(*zip(*pairs, strict=True)))


def test_judge_agreement_by_kind_and_source_equals_sklearn(known):
    """Item 4: each judge and the run's panel against the human reference, overall and by
    criterion kind, against sklearn's kappa on pairs built from the fixture's raw data."""
    from sklearn.metrics import cohen_kappa_score

    from tests.evaluation.analytics.known import JUDGES

    data = sel.load_run(known.run)
    rows = {(a.rater, a.group, a.value): a for a in summaries.judge_agreement(data)}
    judge_names = list(JUDGES)
    for n, judge in enumerate(judge_names):
        for kind in ("fact", "methodology", "format"):
            pairs = []
            for (answer, criterion), votes in known.votes.items():
                if known.criteria[criterion][1] != kind:
                    continue
                reference = known.adjudications.get((answer, criterion))
                labels = known.labels.get((answer, criterion), [])
                if reference is None and labels:
                    p, f = labels.count("pass"), labels.count("fail")
                    reference = "pass" if p > f else "fail" if f > p else None
                vote = votes[n]
                if reference is None or vote not in ("pass", "fail"):
                    continue
                pairs.append((vote, reference))
            if not pairs:
                assert (judge, "kind", kind) not in rows
                continue
            got = rows[judge, "kind", kind].agreement
            assert got.n == len(pairs)
            assert got.percent == pytest.approx(sum(a == b for a, b in pairs) / len(pairs))
            if len({p for pair in pairs for p in pair}) > 1:
                expected = cohen_kappa_score(*zip(*pairs, strict=True), labels=["pass", "fail"])
                assert got.kappa.kappa == pytest.approx(expected)
    panel = [a for a in rows.values() if a.rater == summaries.PANEL and a.group == "all"]
    assert len(panel) == 1 and panel[0].agreement.n > 0
    assert {a.group for a in rows.values()} == {"all", "kind", "source"}


def _figures(data: summaries.RunData) -> tuple:
    return (
        summaries.system_scores(data, resamples=50),
        sel.calibrated_scores(data, resamples=50),
        summaries.criterion_health(data),
        summaries.judge_agreement(data),
        summaries.every_bucket_rows(data),
        (data.item_count, data.adjudicated, data.labelled, data.checklist_size),
    )


def test_items_read_without_a_temporary_table_in_a_read_only_snapshot(known):
    """The dataset export computes figures inside a READ ONLY transaction, where
    PostgreSQL refuses CREATE TEMPORARY TABLE: the items are then a subquery of each
    aggregate, with the same figures."""
    from django.db import connection, transaction

    from evaluation.kept import figures as figure_cache

    expected = _figures(sel.load_run(known.run))
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION READ ONLY")
        with figure_cache.read_only():
            assert _figures(sel.load_run(known.run)) == expected
