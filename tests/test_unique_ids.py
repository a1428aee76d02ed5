"""`store.unique_ids` and `store.distinct` count where np.unique sorts: for every input kind the analyses hand
them (ids of a small range, wide keys, negatives, narrow dtypes, nothing) they return exactly what np.unique
returns, dtypes and shapes included, for every combination of what is asked."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mlptui.trace.store import distinct, unique_ids

_RNG = np.random.default_rng(7)
CASES = {
    "empty": np.zeros(0, dtype=np.int64),
    "one": np.array([5], dtype=np.int64),
    "all equal": np.full(40, 3, dtype=np.int64),
    "string ids": _RNG.integers(0, 300, 5000),
    "wide keys (np.unique's own path)": _RNG.integers(0, 10**9, 500),
    "negatives (np.unique's own path)": _RNG.integers(-5, 5, 200),
    "int32": _RNG.integers(0, 100, 1000).astype(np.int32),
    "int8": _RNG.integers(0, 100, 1000).astype(np.int8),
    "uint16": _RNG.integers(0, 3000, 1000).astype(np.uint16),
    "sorted": np.sort(_RNG.integers(0, 90, 3000)),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("flags", list(itertools.product((False, True), repeat=3))[1:])
def test_unique_ids_is_np_unique(name: str, flags: tuple[bool, bool, bool]) -> None:
    values = CASES[name]
    kw = dict(zip(("return_index", "return_inverse", "return_counts"), flags, strict=True))
    want = np.unique(values, **kw)
    got = unique_ids(values, **kw)
    assert len(got) == len(want)
    for w, g in zip(want, got, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.array_equal(g, w)


@pytest.mark.parametrize("name", list(CASES))
def test_distinct_is_plain_np_unique(name: str) -> None:
    values = CASES[name]
    want = np.unique(values)
    got = distinct(values)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)
