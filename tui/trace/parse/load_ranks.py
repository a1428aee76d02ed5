"""Load the rank traces of a run, yielding (path, Trace | MlptuiError) as each one is ready.

One after another with the ordinary loader; a parallel loader with the same signature can replace it
without touching the callers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

from mlptui.contract.errors import MlptuiError
from mlptui.trace.model import Trace
from mlptui.trace.parse.load import load_trace

OnProgress = Callable[[str, int, int], None]


def load_ranks(paths: Sequence[str | os.PathLike[str]], *, workers: int | None = None,
               on_progress: OnProgress | None = None) -> Iterator[tuple[str, Trace | MlptuiError]]:
    """Each path once, as `str(path)`, with its Trace or the one-line error that loading it raised."""
    del workers  # one at a time here
    for name in (str(p) for p in paths):
        progress = None if on_progress is None else (lambda done, total, n=name: on_progress(n, done, total))
        try:
            yield name, load_trace(name, progress=progress)
        except MlptuiError as exc:
            yield name, exc
