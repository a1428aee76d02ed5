"""Explorer speed, measured the way a person meets it, printed side by side with a reference.

1. Cold start: `mlptui` (no arguments: the bundled samples) in a pseudo-terminal, from process start to
   the first painted picker, and to the picker with every row filled in. Reference: a bare Textual app
   that paints one line, started the same way.
2. Key presses on a 1M-event trace (../shared/tools/gen_kineto_trace.py --mb 400, generated when
   missing): time from the key to the end of the repaint it caused, per key, beside the same keys on a
   bundled sample trace. Goal: ≤ 33 ms on the big trace, i.e. no pane rebuilds all its rows per key.

usage: python benchmarks/bench_app.py [--big PATH] [--mb 400] [--runs 3] [--skip-start] [--skip-keys]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pty
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GEN = ROOT.parent / "shared" / "tools" / "gen_kineto_trace.py"

BARE_APP = """
from textual.app import App
from textual.widgets import Static
class Bare(App):
    def compose(self):
        yield Static("bare textual app painted")
Bare().run()
"""


def time_to_text(argv: list[str], needles: list[bytes], timeout: float = 20.0) -> list[float]:
    """Start argv in a 100x30 pty; seconds until each needle first appears in what it wrote."""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ.update({"TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"})
        os.execvp(argv[0], argv)
    import fcntl
    import struct
    import termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    start = time.perf_counter()
    seen: list[float | None] = [None] * len(needles)
    buffer = b""
    try:
        while None in seen and time.perf_counter() - start < timeout:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    buffer += os.read(fd, 65536)
                except OSError:
                    break
                for i, needle in enumerate(needles):
                    if seen[i] is None and needle in buffer:
                        seen[i] = time.perf_counter() - start
    finally:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
        os.close(fd)
    return [s if s is not None else float("nan") for s in seen]


def cold_start(runs: int) -> None:
    mlptui = [sys.executable, "-m", "mlptui.cli"]
    bare = [sys.executable, "-c", BARE_APP]
    ours_first, ours_full, ref = [], [], []
    for _ in range(runs):
        first, full = time_to_text(mlptui, [b"bundled sample traces", b"kernels-mlp \xc2\xb7 eager"])
        ours_first.append(first)
        ours_full.append(full)
        ref.append(time_to_text(bare, [b"bare textual app painted"])[0])
    med = statistics.median
    print(f"cold start, median of {runs} (goal: first screen <= 1.0 s)")
    print(f"  mlptui: picker painted          {med(ours_first):6.3f} s")
    print(f"  mlptui: every row filled in     {med(ours_full):6.3f} s")
    print(f"  bare Textual app painted        {med(ref):6.3f} s")
    ratio = med(ours_first) / med(ref)
    print(f"  ratio mlptui first paint / bare {ratio:6.2f}x (goal <= 1.5x: {'met' if ratio <= 1.5 else 'NOT met'})")


SIZES = [(200, 60), (100, 30)]
WAIT = "<wait for workers>"


async def key_latencies(spec: str, keys: list[tuple[str, list[str]]]) -> dict[tuple[int, int], dict[str, list[float]]]:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    from app_support import wait_for_screen

    from mlptui.app import make_app
    from mlptui.screens.trace_screen import TraceScreen

    app = make_app([spec])
    painted: list[float] = []
    original = app._display

    def display(screen, renderable) -> None:
        original(screen, renderable)
        if renderable is not None:
            painted.append(time.perf_counter())

    app._display = display
    by_size: dict[tuple[int, int], dict[str, list[float]]] = {}
    async with app.run_test(size=SIZES[0]) as pilot:
        start = time.perf_counter()
        while not isinstance(app.screen, TraceScreen) and time.perf_counter() - start < 600:
            await asyncio.sleep(0.01)
        opened = time.perf_counter() - start
        await wait_for_screen(app, pilot, TraceScreen, timeout=600)
        await app.workers.wait_for_complete()
        linked = time.perf_counter() - start
        for size in SIZES:
            await pilot.resize_terminal(*size)
            await pilot.pause(0.5)
            results: dict[str, list[float]] = {"_open": [opened], "_launches": [linked]}
            for label, sequence in keys:
                for key in sequence:
                    if key == WAIT:         # let background work finish; not timed
                        await app.workers.wait_for_complete()
                        await pilot.pause(0.2)
                        continue
                    painted.clear()
                    start = time.perf_counter()
                    await pilot.press(key)
                    deadline = start + 5
                    while not painted and time.perf_counter() < deadline:
                        await asyncio.sleep(0.0005)
                    if painted:     # a key that changes nothing (collapse a closed node) paints nothing
                        results.setdefault(label, []).append((painted[0] - start) * 1000)
                    await pilot.pause(0.02)
            by_size[size] = results
    return by_size


KEYS = [
    ("focus a pane (1-6)", ["3", "4", "5", "6", "1", "2"]),
    ("tree: cursor down (j)", ["j"] * 8),
    ("tree: collapse/expand (h/l)", ["h", "l", "h", "l"]),
    ("tree: page down", ["pagedown"] * 4),
    ("step: next/prev (]/[)", ["right_square_bracket", "left_square_bracket"] * 2),
    ("step: all steps and back", ["right_square_bracket", "left_square_bracket"]),
    # each `[` a step not shown before: nothing of it is kept yet (the keys above come back to kept scopes)
    ("step: back through new steps ([ x4)", ["left_square_bracket"] * 4),
    ("kernels: cursor down (j)", ["3"] + ["j"] * 8),
    ("launches: cursor down (j)", ["4"] + ["j"] * 4),
    ("timeline: zoom/pan (+ - l h)", ["5", "plus", "l", "h", "minus"]),
    ("raw names (r)", ["r", "r"]),
    # the profiler views: the first key opens the screen and starts the figures in a worker
    ("views: open (o), switch (p K M u)", ["o", "p", "K", "M", "u"]),
    ("views: operators j, sort (s)", [WAIT, "p", "j", "j", "j", "s", "s"]),
    ("views: kernels j, group (a)", ["K", "j", "j", "a", "a"]),
    # the views open on the trace screen's scope (a step, here); `]` then computes every step in a worker
    ("views: all steps (]), switch meanwhile", ["right_square_bracket", "p", "K", "M", "u"]),
    ("views, all steps: operators j, sort", [WAIT, "p", "j", "j", "j", "s", "s"]),
    ("views, all steps: kernels j, group", ["K", "j", "j", "a", "a"]),
    ("views: overview, back (esc)", ["o", "escape"]),
]


def keypresses(big: Path, small: str) -> None:
    print("\nkey press to repaint, ms (median / max per key kind; goal <= 33 ms on the big trace)")
    load_before = os.getloadavg()
    big_by_size = asyncio.run(key_latencies(str(big), KEYS))
    small_by_size = asyncio.run(key_latencies(small, KEYS))
    load_after = os.getloadavg()
    print(f"  load average (1, 5, 15 min) before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    for size in SIZES:
        big_res, small_res = big_by_size[size], small_by_size[size]
        print(f"  terminal {size[0]}x{size[1]}")
        print(f"  {'key':<40} {'1M-event trace':>18} {'bundled sample':>18}")
        worst = 0.0
        for label, _ in KEYS:
            b, s = big_res.get(label, [float("nan")]), small_res.get(label, [float("nan")])
            worst = max(worst, max(b))
            print(f"  {label:<40} {statistics.median(b):7.1f} / {max(b):7.1f} "
                  f"{statistics.median(s):7.1f} / {max(s):7.1f}")
        print(f"  worst key on the big trace: {worst:.1f} ms (goal <= 33 ms: {'met' if worst <= 33 else 'NOT met'})\n")
    big_res, small_res = big_by_size[SIZES[0]], small_by_size[SIZES[0]]
    print(f"  big trace: screen shown {big_res['_open'][0]:.1f} s after start, launch lists linked at "
          f"{big_res['_launches'][0]:.1f} s (sample: {small_res['_open'][0]:.2f} s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--big", type=Path, help="a large trace (default: generate one in a temp folder)")
    parser.add_argument("--mb", type=int, default=400)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-start", action="store_true")
    parser.add_argument("--skip-keys", action="store_true")
    args = parser.parse_args()
    os.chdir(ROOT)
    if not args.skip_start:
        cold_start(args.runs)
    if not args.skip_keys:
        sys.path.insert(0, str(ROOT))
        from mlptui.samples import sample_trace_paths

        small = next(str(p) for p in sample_trace_paths() if p.name.startswith("mlp-eager-"))
        big = args.big
        with tempfile.TemporaryDirectory() as tmp:
            if big is None:
                big = Path(tmp) / "big.pt.trace.json"
                print(f"\ngenerating a {args.mb} MB trace with {GEN.name}…")
                subprocess.run([sys.executable, str(GEN), str(big), "--mb", str(args.mb)], check=True)
            keypresses(big, small)
    return 0


if __name__ == "__main__":
    sys.exit(main())
