"""Progress of `mlptui run` on stderr: a live spinner with elapsed time on a terminal, plain lines
otherwise (logs, CI), and the closing table of results on stdout."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from rich.console import Console
from rich.table import Table


def _console(*, stderr: bool) -> Console:
    """A piped console defaults to 80 columns, which folds the trace names; logs can be wider."""
    console = Console(stderr=stderr, highlight=False)
    return console if console.is_terminal else Console(stderr=stderr, highlight=False, width=240)


class RunProgress:
    def __init__(self, err: Console | None = None, out: Console | None = None) -> None:
        self.err = err or _console(stderr=True)
        self.out = out or _console(stderr=False)
        self._status: Any = None

    @contextlib.contextmanager
    def stage(self, text: str) -> Iterator[None]:
        """Show `text` while the block runs; print it with its duration when it ends."""
        start = time.perf_counter()
        if self.err.is_terminal:
            with self.err.status(text) as status:
                self._status = status
                try:
                    yield
                finally:
                    self._status = None
        else:
            self.err.print(f"{text} …")
            yield
        self.err.print(f"  [green]✓[/] {text} [dim]{time.perf_counter() - start:.1f} s[/]")

    def update(self, text: str) -> None:
        """Refresh the current stage's line (e.g. profiler step 3/5); silent when not live."""
        if self._status is not None:
            self._status.update(text)

    def note(self, text: str) -> None:
        self.err.print(text, soft_wrap=True)   # one line, however long (a skip's or failure's reason)

    def results(self, runs: list[dict[str, Any]], folder: str) -> None:
        if not runs:
            return
        table = Table(title=f"mlptui run → {folder}", title_justify="left")
        for col, justify in (("workload", "left"), ("mode", "left"), ("median µs", "right"),
                             ("p10–p90 µs", "right"), ("TFLOP/s", "right"), ("max rel err", "right"),
                             ("compile s", "right")):
            table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]
        table.add_column("kernel source", max_width=32, overflow="ellipsis", no_wrap=True)
        table.add_column("trace", overflow="fold")
        for r in runs:
            t = r["timing"]
            table.add_row(
                r["workload"], r["mode"], f"{t['median_us']:.1f}", f"{t['p10_us']:.1f}–{t['p90_us']:.1f}",
                f"{r['tflops']:.3g}", f"{r['max_rel_err_vs_fp32']:.2e}", f"{r['compile_s']:.2f}",
                r["kernel_source"], r["trace"],
            )
        self.out.print(table)
