"""Load the rank traces of a run, yielding (path, Trace | MlptuiError) as each one is ready.

One after another with the ordinary loader; a parallel loader with the same signature can replace it
without touching the callers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from mlptui.contract.errors import MlptuiError
from mlptui.trace.model import Trace
from mlptui.trace.parse.load import load_trace

OnProgress = Callable[[Path, int, int], None]


def load_ranks(paths: Sequence[Path], *, workers: int | None = None,
               on_progress: OnProgress | None = None) -> Iterator[tuple[Path, Trace | MlptuiError]]:
    del workers  # one at a time here
    for path in paths:
        progress = None if on_progress is None else (lambda done, total, p=path: on_progress(p, done, total))
        try:
            yield path, load_trace(path, progress=progress)
        except MlptuiError as exc:
            yield path, exc
