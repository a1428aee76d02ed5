"""Everything about the selected op, launch call or kernel; args decoded now, for this item only."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from tui.trace.model import LAUNCH_CATS, Trace
from tui.trace.names import decode_kernel
from tui.trace.occupancy import kernel_occupancy
from tui.trace.roofline import kernel_roofline
from tui.widgets import fmt

ARG_CHARS = 160


def _value(value: Any) -> str:
    text = str(value)
    return text if len(text) <= ARG_CHARS else text[: ARG_CHARS - 1] + "…"


def _kv(lines: list[str], key: str, value: Any) -> None:
    if value not in (None, "", [], ()):
        lines.append(f"  [b]{escape(key)}[/b]  {escape(_value(value))}")


def op_details(trace: Trace, op_id: int) -> str:
    op = trace.ops[op_id]
    lines = [f"[b]{escape(op.name)}[/b]  ({op.cat}, thread {op.tid})"]
    _kv(lines, "start", f"+{fmt.us(op.ts)}")
    _kv(lines, "total / self CPU", f"{fmt.us(op.dur)} / {fmt.us(op.self_us)}")
    _kv(lines, "GPU time launched", fmt.us(op.gpu_us) if op.gpu_us else "none: this op launches nothing on the GPU")
    if op.step >= 0:
        _kv(lines, "step", trace.steps[op.step].name)
    chain = []
    node = op.parent
    while node >= 0 and len(chain) < 12:
        chain.append(trace.ops[node].name)
        node = trace.ops[node].parent
    _kv(lines, "called from", " ← ".join(chain))
    calls = [c for c in op.children if trace.ops[c].cat in LAUNCH_CATS]
    if op.cat in LAUNCH_CATS:
        _kv(lines, "correlation", op.correlation)
        calls = []
    if calls:
        lines.append("[b]runtime / driver calls[/b]")
        for c in calls[:20]:
            call = trace.ops[c]
            lines.append(f"  {escape(call.name)}  {fmt.us(call.dur)}  corr {call.correlation}")
    kernels = list(op.gpu)
    if kernels:
        lines.append("[b]GPU work launched[/b]  (g: jump to it)")
        for g in kernels[:20]:
            k = trace.gpu[g]
            lines.append(f"  {escape(decode_kernel(k.name).short)}  {fmt.us(k.dur)}  stream {k.stream}")
    args = trace.op_args(op_id)
    if args:
        lines.append("[b]args[/b]")
        for key, value in args.items():
            _kv(lines, key, value)
    return "\n".join(lines)


def gpu_details(trace: Trace, gid: int) -> str:
    g = trace.gpu[gid]
    name = decode_kernel(g.name)
    lines = [f"[b]{escape(name.short)}[/b]  ({name.family}, {escape(name.library)})", f"  {escape(g.name)}"]
    _kv(lines, "duration", fmt.us(g.dur))
    _kv(lines, "start", f"+{fmt.us(g.ts)} on GPU {g.device} stream {g.stream}")
    for field in ("kind", "ops", "tile", "stages", "cluster", "dtype", "layout", "epilogue", "vector_width",
                  "k_tile", "variant"):
        value = getattr(name, field, None)
        _kv(lines, field, ", ".join(value) if isinstance(value, tuple) else value)
    occ = kernel_occupancy(trace, gid)
    if occ is not None:
        _kv(lines, "theoretical occupancy",
            f"{fmt.pct(occ.fraction)} ({occ.blocks_per_sm} blocks, {occ.warps_per_sm}/{occ.max_warps_per_sm} "
            f"warps per SM; limited by {occ.limiter})")
    roof = kernel_roofline(trace, gid)
    if roof is not None:
        parts = []
        if roof.tflops is not None:
            parts.append(f"{roof.tflops:.2f} TFLOP/s")
        if roof.gbps is not None:
            parts.append(f"{roof.gbps:.0f} GB/s")
        if roof.pct_of_peak is not None:
            parts.append(f"{roof.pct_of_peak:.0f}% of peak")
        _kv(lines, "roofline", f"{', '.join(parts)} ({roof.bound}-bound)")
    if g.launch >= 0:
        call = trace.ops[g.launch]
        _kv(lines, "launched by", f"{call.name} ({fmt.us(call.dur)}, correlation {g.correlation})")
    if g.op >= 0:
        chain = []
        node = g.op
        while node >= 0 and len(chain) < 12:
            chain.append(trace.ops[node].name)
            node = trace.ops[node].parent
        _kv(lines, "CPU op", " ← ".join(chain))
    elif g.launch < 0:
        _kv(lines, "CPU op", "none linked")
    args = trace.gpu_args(gid)
    if args:
        lines.append("[b]args[/b]")
        for key, value in args.items():
            _kv(lines, key, value)
    return "\n".join(lines)


class Details(VerticalScroll, can_focus=True):
    """A scrollable text of the selected item's facts."""

    DEFAULT_CSS = """
    Details { height: 1fr; }
    Details > Static { width: 1fr; }
    """

    def compose(self):
        yield Static("", id="details-text", markup=True)

    text = ""

    def show_text(self, markup: str) -> None:
        self.text = markup
        self.query_one("#details-text", Static).update(Text.from_markup(markup) if markup else "")
        self.scroll_home(animate=False)
