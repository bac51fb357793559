"""The resampling counts kept per process (`metrics.analytics._counts`) give bit-identical
sums to drawing them on every call, and the cache stays within its byte limit."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.metrics import analytics as am


def _drawn_every_time(columns, resamples: int, seed: int, cells: int = 400_000) -> np.ndarray:
    # resampled_sums as it was before the counts were kept (the reference).
    data = np.asarray(columns, dtype=float)
    k = data.shape[1]
    rng = np.random.default_rng(seed)
    out = np.empty((data.shape[0], resamples))
    step = max(1, cells // k)
    with am._one_blas_thread():  # as resampled_sums always did
        _draw(data, rng, out, k, step, resamples)
    return out


def _draw(data, rng, out, k, step, resamples) -> None:
    for start in range(0, resamples, step):
        stop = min(resamples, start + step)
        drawn = rng.integers(0, k, size=(stop - start, k))
        rows = np.arange(stop - start)[:, None] * k
        counts = np.bincount((drawn + rows).ravel(), minlength=(stop - start) * k)
        out[:, start:stop] = data @ counts.reshape(stop - start, k).T.astype(float)


@pytest.fixture(autouse=True)
def _empty_cache():
    am._counts_cache.clear()
    yield
    am._counts_cache.clear()


@pytest.mark.parametrize("k", [1, 2, 7, 300, 2500, 2501])
def test_kept_counts_give_bit_identical_sums(k):
    rng = np.random.default_rng(k)
    columns = rng.random((6, k)).tolist()
    expected = _drawn_every_time(columns, 2000, am.BOOTSTRAP_SEED)
    first = am.resampled_sums(columns, 2000, am.BOOTSTRAP_SEED)  # drawn, then kept
    again = am.resampled_sums(columns, 2000, am.BOOTSTRAP_SEED)  # from the kept counts
    assert np.array_equal(first, expected)
    assert np.array_equal(again, expected)
    assert (k, 2000, am.BOOTSTRAP_SEED, max(1, 400_000 // k)) in am._counts_cache.entries


def test_small_chunks_and_other_seeds_are_kept_apart():
    columns = [[1.0, 2.0, 3.0, 4.0, 5.0]]
    for seed in (1, 2):
        for cells in (7, 400_000):
            assert np.array_equal(
                am.resampled_sums(columns, 50, seed, cells=cells),
                _drawn_every_time(columns, 50, seed, cells=cells),
            )
    assert len(am._counts_cache.entries) == 4


def test_the_cache_drops_the_least_recently_used_past_its_limit():
    cache = am._CountsCache(limit=3000)
    one = [np.zeros((10, 100), dtype=np.uint8)]  # 1,000 bytes each
    for k in range(4):
        cache.put((k, 10, 1, 1), one)
        cache.get((0, 10, 1, 1))  # 0 stays in use
    assert list(cache.entries) == [(2, 10, 1, 1), (3, 10, 1, 1), (0, 10, 1, 1)]
    assert cache.size == 3000
    cache.put((9, 10, 1, 1), [np.zeros((10, 1000), dtype=np.uint8)])  # larger than the limit
    assert (9, 10, 1, 1) not in cache.entries


def test_counts_are_kept_two_a_byte_and_come_back_the_same():
    rng = np.random.default_rng(1)
    for k in (2, 3, 10, 11):
        counts = rng.integers(0, 16, size=(5, k))
        kept = am._packed(counts)
        assert kept.dtype == np.uint8 and kept.shape == (5, (k + 1) // 2)
        back = am._unpacked(kept, k)
        assert np.array_equal(back, counts) and back.flags.c_contiguous
    big = np.array([[0, 16, 3], [300, 0, 1]])  # a count of 16 or more: not packed
    assert am._packed(big).dtype == np.uint32
    assert np.array_equal(am._unpacked(am._packed(big), 3), big)
    one = np.array([[1], [1]])  # one cluster: never packed (ceil(1 / 2) = 1 column)
    assert np.array_equal(am._unpacked(am._packed(one), 1), one)


def test_kept_counts_cannot_be_changed_by_a_caller():
    (chunk,) = am._counts(5, 10, 1, 100)
    with pytest.raises(ValueError):
        chunk[0, 0] = 9
