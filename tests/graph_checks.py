"""Shared by the critical-path tests: two step graphs equal field by field, arrays by dtype and value."""

from __future__ import annotations

import dataclasses

import numpy as np

from mlptui.trace.analysis.critical_path.critical_graph import Graph


def assert_same_graph(a: Graph, b: Graph) -> None:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), f.name
        else:
            assert x == y, f.name
