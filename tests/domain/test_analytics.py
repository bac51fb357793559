"""evaluation/metrics/analytics.py held to independent computations: ppi_py for PPI++,
scipy for the sign test, numpy for the bootstrap, a hand-computed fixture for buckets."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy.stats import binomtest

from evaluation.metrics.analytics import (
    Bucket,
    CriterionItems,
    PPIItem,
    bucket_of,
    cluster_bootstrap,
    complexity_buckets,
    criterion_health,
    labels_needed,
    mean_of_means,
    paired_comparison,
    parse_edges,
    ppi_lambda,
    ppi_mean,
    ppi_mean_weighted,
    query_means,
    sign_test,
)

# -- buckets ----------------------------------------------------------------------------


def test_default_buckets_are_the_methods():
    labels = [b.label for b in complexity_buckets()]
    assert labels == ["<10", "10–14", "15–19", "20–24", "25–29", "30–34", "≥35"]
    assert [b.key for b in complexity_buckets()][:2] == ["lt10", "10-14"]


@pytest.mark.parametrize(
    ("count", "label"),
    [(1, "<10"), (9, "<10"), (10, "10–14"), (14, "10–14"), (15, "15–19"), (34, "30–34"),
     (35, "≥35"), (120, "≥35")],
)  # fmt: skip
def test_bucket_of_edges(count, label):
    assert bucket_of(count, complexity_buckets()).label == label


def test_bucket_means_by_hand():
    # Checklists with 8, 12, 12, 21 and 40 criteria; shares 0.5, 0.25, 0.75, 1.0, 0.1.
    rows = [(8, 0.5), (12, 0.25), (12, 0.75), (21, 1.0), (40, 0.1)]
    buckets = complexity_buckets((10, 20))
    by_bucket: dict[Bucket, list[float]] = {}
    for count, share in rows:
        by_bucket.setdefault(bucket_of(count, buckets), []).append(share)
    means = {b.label: sum(v) / len(v) for b, v in by_bucket.items()}
    assert means == {"<10": 0.5, "10–19": 0.5, "≥20": pytest.approx(0.55)}


@pytest.mark.parametrize("text", ["", "10,10", "20,10", "0,5", "a,b"])
def test_bad_edges_are_refused(text):
    with pytest.raises(ValueError):
        parse_edges(text)


def test_edges_parse():
    assert parse_edges(" 5, 10 ,40") == (5, 10, 40)


# -- cluster bootstrap -------------------------------------------------------------------


def _numpy_cluster_bootstrap(values_by_cluster, resamples, seed, confidence=0.95):
    """The same resampling scheme and generator (PCG64, seeded), computed apart."""
    keys = sorted(values_by_cluster, key=str)
    sums = np.array([sum(values_by_cluster[k]) for k in keys])
    counts = np.array([len(values_by_cluster[k]) for k in keys])
    k = len(keys)
    draws = np.random.default_rng(seed).integers(0, k, size=(resamples, k))
    means = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    alpha = (1 - confidence) / 2
    return np.quantile(means, alpha), np.quantile(means, 1 - alpha)


def test_cluster_bootstrap_fixed_seed():
    data = {"q1": [0.2, 0.4], "q2": [0.9], "q3": [0.5, 0.6, 0.7], "q4": [0.1]}
    est = cluster_bootstrap(data, resamples=500, seed=7)
    assert est.mean == pytest.approx(sum(sum(v) for v in data.values()) / 7)
    low, high = _numpy_cluster_bootstrap(data, 500, 7)
    assert (est.low, est.high) == (pytest.approx(low), pytest.approx(high))
    assert (est.n, est.clusters) == (7, 4)
    # Same seed, same interval; whatever order the mapping was built in.
    again = cluster_bootstrap(dict(reversed(list(data.items()))), resamples=500, seed=7)
    assert (again.low, again.high) == (est.low, est.high)


def test_cluster_bootstrap_small():
    assert cluster_bootstrap({}).mean is None
    one = cluster_bootstrap({"q": [0.5, 1.0]})
    assert (one.mean, one.low, one.high) == (0.75, None, None)


# -- paired comparison ----------------------------------------------------------------


def test_sign_test_is_scipys_binomial_test():
    for gains, losses in [(0, 1), (3, 1), (10, 2), (7, 7), (0, 12), (25, 14)]:
        expected = binomtest(gains, gains + losses, 0.5).pvalue
        assert sign_test(gains, losses) == pytest.approx(expected, rel=1e-12)
    assert sign_test(0, 0) is None


def test_paired_comparison_on_a_fixture():
    a = {"q1": 0.5, "q2": 0.6, "q3": 0.8, "q4": 0.4, "q5": 0.9, "q6": 0.3, "only-a": 1.0}
    b = {"q1": 0.7, "q2": 0.6, "q3": 0.6, "q4": 0.7, "q5": 1.0, "q6": 0.5, "only-b": 0.0}
    result = paired_comparison(a, b, resamples=1000, seed=3)
    diffs = np.array([b[q] - a[q] for q in sorted(set(a) & set(b))])
    assert result.n == 6
    assert result.difference == pytest.approx(diffs.mean())
    assert (result.gains, result.losses, result.ties) == (4, 1, 1)
    assert result.sign_p == pytest.approx(binomtest(4, 5, 0.5).pvalue)
    # The bootstrap, recomputed with numpy from the same draws.
    draws = np.random.default_rng(3).integers(0, 6, size=(1000, 6))
    means = diffs[draws].mean(axis=1)
    assert result.low == pytest.approx(np.quantile(means, 0.025))
    assert result.high == pytest.approx(np.quantile(means, 0.975))
    p = min(1, 2 * min((1 + (means <= 0).sum()) / 1001, (1 + (means >= 0).sum()) / 1001))
    assert result.bootstrap_p == pytest.approx(p)


def test_paired_comparison_of_nothing():
    result = paired_comparison({"q1": 0.5}, {"q2": 0.5})
    assert result.n == 0 and result.difference is None and result.sign_p is None


# -- PPI++ held to ppi_py ---------------------------------------------------------------


def _fixture(n_labelled: int, n_unlabelled: int, seed: int, clusters: int = 0):
    rng = np.random.default_rng(seed)
    truth = rng.random(n_labelled + n_unlabelled) < 0.6
    # A judge that is right 85% of the time and leans towards "pass".
    flip = rng.random(truth.size) < 0.15
    pred = np.where(flip, rng.random(truth.size) < 0.8, truth).astype(float)
    y = truth.astype(float)
    items = [
        PPIItem(
            cluster=(i % clusters if clusters else i),
            prediction=float(pred[i]),
            label=float(y[i]) if i < n_labelled else None,
        )
        for i in range(truth.size)
    ]
    return items, y[:n_labelled], pred[:n_labelled], pred[n_labelled:]


@pytest.mark.parametrize(("n", "big_n", "seed"), [(40, 400, 1), (150, 2000, 2), (12, 90, 3)])
def test_ppi_matches_ppi_py(n, big_n, seed):
    ppi_py = pytest.importorskip("ppi_py")
    items, y, yhat, yhat_u = _fixture(n, big_n, seed)
    est = ppi_mean(items)
    point = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u)
    low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05)
    assert est.mean == pytest.approx(float(np.squeeze(point)), abs=1e-12)
    assert est.low == pytest.approx(float(np.squeeze(low)), abs=1e-12)
    assert est.high == pytest.approx(float(np.squeeze(high)), abs=1e-12)
    assert (est.labelled, est.unlabelled) == (n, big_n)
    assert 0.0 <= est.lam <= 1.0


def test_ppi_with_a_fixed_lambda_matches_ppi_py():
    ppi_py = pytest.importorskip("ppi_py")
    items, y, yhat, yhat_u = _fixture(50, 300, 4)
    for lam in (0.0, 0.5, 1.0):
        est = ppi_mean(items, lam=lam)
        low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05, lam=lam)
        assert est.low == pytest.approx(float(np.squeeze(low)), abs=1e-12)
        assert est.high == pytest.approx(float(np.squeeze(high)), abs=1e-12)
    # λ = 0 is the classical interval on the labelled items alone.
    classical = ppi_mean(items, lam=0.0)
    assert classical.mean == pytest.approx(y.mean())


@pytest.mark.parametrize(("n", "big_n", "seed"), [(40, 400, 7), (150, 2000, 8), (12, 90, 9)])
def test_weighted_ppi_matches_ppi_py_with_weights(n, big_n, seed):
    """Unequal chances (the least-certain queue): each labelled item weighs its inverse
    chance, the judge's mean is over the whole population (labelled items included)."""
    ppi_py = pytest.importorskip("ppi_py")
    items, y, yhat, yhat_u = _fixture(n, big_n, seed)
    weights = np.random.default_rng(seed).uniform(1.0, 6.0, n)
    population = np.concatenate([yhat, yhat_u])
    labelled = [(i, y[i], yhat[i], weights[i], 1) for i in range(n)]
    every = [(i, h, 1) for i, h in enumerate(population)]
    est = ppi_mean_weighted(labelled, every)
    point = ppi_py.ppi_mean_pointestimate(y, yhat, population, w=weights)
    low, high = ppi_py.ppi_mean_ci(y, yhat, population, alpha=0.05, w=weights)
    assert est.mean == pytest.approx(float(np.squeeze(point)), abs=1e-12)
    assert est.low == pytest.approx(float(np.squeeze(low)), abs=1e-12)
    assert est.high == pytest.approx(float(np.squeeze(high)), abs=1e-12)
    # Rows of several alike items give the same as one row each.
    counted: dict = {}
    for _, y_, h_, w_, _ in labelled:
        counted[y_, h_, w_] = counted.get((y_, h_, w_), 0) + 1
    grouped = ppi_mean_weighted(
        [(0, y_, h_, w_, c) for (y_, h_, w_), c in counted.items()],
        [(0, 1.0, int(population.sum())), (0, 0.0, int(population.size - population.sum()))],
    )
    assert grouped.mean == pytest.approx(est.mean, abs=1e-12)
    assert (grouped.low, grouped.high) == (pytest.approx(est.low), pytest.approx(est.high))
    # Equal weights: plain PPI++ with the population as the unlabelled items.
    equal = ppi_mean_weighted([(k, a, b, 1.0, c) for k, a, b, _, c in labelled], every)
    plain = ppi_mean(items[:n] + [PPIItem(i, h) for i, h in enumerate(population)])
    assert (equal.mean, equal.lam) == (pytest.approx(plain.mean), pytest.approx(plain.lam))
    assert ppi_mean_weighted([], every).mean is None  # nothing labelled: no estimate


def test_ppi_lambda_formula():
    _, y, yhat, yhat_u = _fixture(60, 240, 5)
    every = np.concatenate([yhat, yhat_u])
    cov = ((y - y.mean()) * (yhat - yhat.mean())).mean()
    expected = np.clip(cov / ((1 + 60 / 240) * every.var(ddof=1)), 0, 1)
    assert ppi_lambda(list(zip(y, yhat, strict=True)), list(yhat_u)) == pytest.approx(expected)


def test_clustered_ppi_keeps_the_point_and_widens_with_correlated_items():
    ppi_py = pytest.importorskip("ppi_py")
    items, y, yhat, yhat_u = _fixture(80, 800, 6, clusters=40)
    plain = ppi_mean(items)
    clustered = ppi_mean(items, clustered=True, resamples=800, seed=11)
    point = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u)
    assert clustered.mean == pytest.approx(float(np.squeeze(point)))
    assert clustered.lam == plain.lam
    assert clustered.low < clustered.mean < clustered.high
    assert clustered.clusters == 40
    # Same seed, same interval.
    assert ppi_mean(items, clustered=True, resamples=800, seed=11) == clustered


def test_clustered_ppi_with_one_item_per_query_is_close_to_the_normal_interval():
    items, *_ = _fixture(200, 2000, 8)
    plain = ppi_mean(items)
    boot = ppi_mean(items, clustered=True, resamples=2000, seed=1)
    assert boot.low == pytest.approx(plain.low, abs=0.015)
    assert boot.high == pytest.approx(plain.high, abs=0.015)


def test_ppi_edge_cases():
    assert ppi_mean([PPIItem("q", 1.0)]).mean is None  # no label: no estimate
    everything_labelled = [PPIItem(i, 1.0, float(i % 2)) for i in range(10)]
    est = ppi_mean(everything_labelled)
    assert est.mean == 0.5 and est.lam == 0.0
    est = ppi_mean([PPIItem(1, 1.0, 1.0), PPIItem(2, 0.0)])
    assert est.low is None


def test_labels_needed():
    items, *_ = _fixture(40, 400, 9)
    est = ppi_mean(items)
    half = (est.high - est.low) / 2
    assert labels_needed(est, half / 2) == pytest.approx(160, abs=1)
    assert labels_needed(est, 1.0) == 40


# -- criterion health --------------------------------------------------------------------


def test_criterion_health_flags():
    rows = [
        CriterionItems("none", 0, 5, 0, 5, 0, 0, 0, 3),
        CriterionItems("all", 6, 0, 0, 6, 2, 0, 3, 3),
        CriterionItems("split", 3, 3, 3, 6, 0, 0, 2, 3),
        CriterionItems("disagrees", 3, 3, 0, 6, 4, 2, 2, 3),
        CriterionItems("fine", 3, 3, 0, 6, 4, 0, 2, 3),
    ]
    health = {h.criterion: h for h in criterion_health(rows)}
    assert health["none"].flags == ("never passed",)
    assert health["all"].flags == ("always passed",)
    assert health["split"].flags == ("split",) and health["split"].split_rate == 0.5
    assert health["disagrees"].flags == ("disagrees",)
    assert health["fine"].flags == ()
    assert [h.criterion for h in criterion_health(rows)][-1] == "fine"


# -- judge calibration: the panel that agrees best ------------------------------------------


def test_panel_options_rank_by_kappa_and_cost():
    from decimal import Decimal

    from sklearn.metrics import cohen_kappa_score

    from evaluation.metrics.calibration import CalibrationItem, panel_options

    rng = random.Random(4)
    items = []
    for _ in range(60):
        human = rng.choice(["pass", "fail"])
        good = human if rng.random() < 0.9 else "pass"
        lenient = "pass" if rng.random() < 0.6 else human
        noisy = rng.choice(["pass", "fail"])
        items.append(CalibrationItem(human, {"good": good, "lenient": lenient, "noisy": noisy}))
    costs = {"good": Decimal("0.5"), "lenient": Decimal("0.1"), "noisy": None}
    options = panel_options(items, costs)
    assert len(options) == 3 + 3 * 2 + 2  # singletons, pairs × 2 rules, the trio × 2 rules
    # Unanimity of "good" and "lenient" fails what either fails: it undoes the good judge's
    # stray passes, since the lenient one fails only what people fail.
    assert (options[0].judges, options[0].method) == (("good", "lenient"), "unanimity")
    single = next(o for o in options if o.judges == ("good",))
    assert single.method == "single judge"
    assert single.kappa == pytest.approx(
        cohen_kappa_score([i.judges["good"] for i in items], [i.human for i in items])
    )
    human = [i.human for i in items]
    for option in options:
        if option.method != "majority" or len(option.judges) != 3:
            continue
        labels = []
        for i in items:
            votes = [i.judges[j] for j in option.judges]
            labels.append(max(set(votes), key=votes.count))
        assert option.kappa == pytest.approx(cohen_kappa_score(labels, human))
        assert option.cost is None  # "noisy" has no price
    pair = next(o for o in options if o.judges == ("good", "lenient"))
    assert pair.cost == Decimal("0.6")
    kappas = [o.kappa for o in options if o.kappa is not None]
    assert kappas == sorted(kappas, reverse=True)


def test_saturated_queries():
    from evaluation.metrics.analytics import saturated_queries

    scores = {
        "easy": {"a": 1.0, "b": 0.9999999999999999},
        "one system short": {"a": 1.0, "b": 0.95},
        "unscored": {"a": None},
        "easy for the only scored": {"a": 1.0, "b": None},
    }
    assert saturated_queries(scores) == ["easy", "easy for the only scored"]


def _gathered_sums(columns, resamples, seed, cells=400_000):
    """The bootstrap core before issue 12's speed work: gather the drawn clusters, sum."""
    data = np.asarray(columns, dtype=float)
    k = data.shape[1]
    rng = np.random.default_rng(seed)
    out = np.empty((data.shape[0], resamples))
    step = max(1, cells // k)
    for start in range(0, resamples, step):
        stop = min(resamples, start + step)
        drawn = rng.integers(0, k, size=(stop - start, k))
        out[:, start:stop] = data[:, drawn].sum(axis=2)
    return out


@pytest.mark.parametrize("k", [2, 7, 300, 2500])
def test_counted_resampled_sums_equal_the_gathered_ones(k):
    from evaluation.metrics.analytics import resampled_sums

    rng = np.random.default_rng(k)
    columns = [rng.random(k), rng.integers(1, 20, k), rng.random(k) * 30]
    fast = resampled_sums(columns, 1000, 7)
    np.testing.assert_allclose(fast, _gathered_sums(columns, 1000, 7), rtol=1e-12, atol=1e-12)


def test_batched_bootstraps_equal_one_at_a_time():
    from evaluation.metrics.analytics import cluster_bootstrap, cluster_bootstraps

    rng = random.Random(3)
    many = [
        {q: [rng.random() for _ in range(rng.randint(0, 4))] for q in range(rng.randint(0, 40))}
        for _ in range(30)
    ]
    assert cluster_bootstraps(many, resamples=500) == [
        cluster_bootstrap(m, resamples=500) for m in many
    ]


def test_a_query_answered_k_times_counts_once():
    # Query 1 answered four times (all 0), query 2 once (1): by answers 0.2, by queries 0.5.
    samples = {1: [0.0, 0.0, 0.0, 0.0], 2: [1.0], 3: []}
    assert query_means(samples) == {1: [0.0], 2: [1.0]}
    one = cluster_bootstrap(query_means(samples), resamples=200)
    assert one.mean == 0.5 and one.clusters == 2 and one.n == 2
    assert cluster_bootstrap(samples, resamples=200).mean == pytest.approx(0.2)
    assert mean_of_means([[0.0, 0.0, 0.0, 0.0], [1.0], []]) == 0.5
