"""The details text of one op, launch call or kernel: Rich markup lines, with args decoded now, for this
item only. Pure text from the trace, so the widget only wraps and draws it."""

from __future__ import annotations

from typing import Any

from mlptui.base import units
from mlptui.base.text import markup_escape as escape
from mlptui.trace.analysis.kernels.kineto_args import channel_label, disagreement, kineto_occupancy
from mlptui.trace.analysis.kernels.occupancy import device_for, kernel_occupancy, launch_config
from mlptui.trace.analysis.kernels.roofline import kernel_roofline
from mlptui.trace.model import LAUNCH_CATS, Trace
from mlptui.trace.names.kernel import decode_kernel
from mlptui.viewmodels import fmt

ARG_CHARS = 160


def _value(value: Any) -> str:
    text = str(value)
    return text if len(text) <= ARG_CHARS else text[: ARG_CHARS - 1] + "…"


def _args_block(lines: list[str], trace: Trace, args: dict[str, Any]) -> None:
    """The event's own args, decoded on demand, one key per line (or why they cannot be read back)."""
    if args:
        lines.append("[b]args[/b]")
        for key, value in args.items():
            _kv(lines, key, value)
    elif trace.args_problem:
        lines.append(f"[dim]{escape(trace.args_problem)}[/dim]")


def _ancestry(trace: Trace, op_id: int, limit: int = 12) -> list[str]:
    """Names from `op_id` up through its parents (at most `limit`), innermost first."""
    names: list[str] = []
    while op_id >= 0 and len(names) < limit:
        names.append(trace.ops[op_id].name)
        op_id = trace.ops[op_id].parent
    return names


def _kv(lines: list[str], key: str, value: Any) -> None:
    if value not in (None, "", [], ()):
        lines.append(f"  [b]{escape(key)}[/b]  {escape(_value(value))}")


def op_details(trace: Trace, op_id: int) -> str:
    op = trace.ops[op_id]
    lines = [f"[b]{escape(op.name)}[/b]  ({escape(str(op.cat))}, thread {escape(str(op.tid))})"]
    _kv(lines, "start", f"+{fmt.us(op.ts)}")
    _kv(lines, "total / self CPU", f"{fmt.us(op.dur)} / {fmt.us(op.self_us)}")
    _kv(lines, "GPU time launched", fmt.us(op.gpu_us) if op.gpu_us else "none: this op launches nothing on the GPU")
    if op.step >= 0:
        _kv(lines, "step", trace.steps[op.step].name)
    _kv(lines, "called from", " ← ".join(_ancestry(trace, op.parent)))
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
    _args_block(lines, trace, trace.op_args(op_id))
    return "\n".join(lines)


def gpu_details(trace: Trace, gid: int) -> str:
    g = trace.gpu[gid]
    name = decode_kernel(g.name)
    lines = [f"[b]{escape(name.short)}[/b]  ({escape(name.family)}, {escape(name.library)})", f"  {escape(g.name)}"]
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
    args = trace.gpu_args(gid)
    _kineto_lines(lines, trace, gid, args)
    _kv(lines, "channel", channel_label(args))
    roof = kernel_roofline(trace, gid)
    if roof is not None:
        parts = []
        if roof.tflops is not None:
            parts.append(units.throughput(roof.tflops))
        if roof.gbps is not None:
            parts.append(units.bandwidth(roof.gbps))
        if roof.pct_of_peak is not None:
            parts.append(f"{units.share(roof.pct_of_peak / 100)} of peak")
        _kv(lines, "roofline", f"{', '.join(parts)} ({roof.bound}-bound)")
    if g.launch >= 0:
        call = trace.ops[g.launch]
        _kv(lines, "launched by", f"{call.name} ({fmt.us(call.dur)}, correlation {g.correlation})")
    if g.op >= 0:
        _kv(lines, "CPU op", " ← ".join(_ancestry(trace, g.op)))
    elif g.launch < 0:
        _kv(lines, "CPU op", "none linked")
    _args_block(lines, trace, args)
    return "\n".join(lines)


def _kineto_lines(lines: list[str], trace: Trace, gid: int, args: dict[str, Any]) -> None:
    """Kineto's own occupancy result beside ours, and which is right where they differ."""
    kin = kineto_occupancy(args)
    if kin is None:
        return
    limited = ", ".join(kin.limiters) or "none"
    _kv(lines, "Kineto's occupancy", f"{kin.active_blocks} blocks per SM; limited by {limited} (as Kineto wrote it)")
    cfg = launch_config(args)
    why = disagreement(kin, kernel_occupancy(trace, gid), cfg[3] if cfg else 0,
                       device_for(trace, trace.gpu[gid].device))
    _kv(lines, "which is right", why)
