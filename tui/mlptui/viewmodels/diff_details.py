"""What the diff screen shows for one row: per side, each kernel's launch chain, decoded config,
launch geometry, occupancy and roofline, as plain text lines (headless, testable)."""

from __future__ import annotations

from typing import Any

from mlptui.base.units import bandwidth, duration, share, throughput
from mlptui.render.diff_text import MARKERS, fmt_delta
from mlptui.trace.diff.trace_diff import DiffKernel, DiffRow, TraceDiff
from mlptui.trace.model import Trace
from mlptui.trace.names.kernel import decode_kernel

_CONFIG_FIELDS = ("family", "library", "kind", "tile", "k_tile", "stages", "cluster", "dtype", "layout",
                  "epilogue", "variant", "vector_width")
_ARG_FIELDS = ("grid", "block", "registers per thread", "shared memory", "blocks per SM", "warps per SM",
               "est. achieved occupancy %")


def _occupancy(trace: Trace, gpu_id: int) -> str | None:
    from mlptui.trace.analysis.kernels.occupancy import kernel_occupancy

    occ = kernel_occupancy(trace, gpu_id)
    if occ is None:
        return None
    return (f"{share(occ.fraction)} theoretical ({occ.blocks_per_sm} blocks, {occ.warps_per_sm}/"
            f"{occ.max_warps_per_sm} warps per SM; limited by {occ.limiter})")


def _roofline(trace: Trace, gpu_id: int) -> str | None:
    from mlptui.trace.analysis.kernels.roofline import kernel_roofline

    roof = kernel_roofline(trace, gpu_id)
    if roof is None:
        return None
    parts = []
    if roof.tflops:
        parts.append(throughput(roof.tflops))
    if roof.gbps:
        parts.append(bandwidth(roof.gbps))
    if roof.pct_of_peak is not None:
        parts.append(f"{share(roof.pct_of_peak / 100)} of peak")
    bound = roof.bound
    if bound:
        parts.append(f"{bound}-bound")
    return ", ".join(parts) or None


def _fmt_arg(value: Any) -> str:
    if isinstance(value, list):
        return "×".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:.1f}".removesuffix(".0")
    return str(value)


def kernel_lines(trace: Trace | None, k: DiffKernel) -> list[str]:
    lines = [f"{k.kind} {k.short}   {duration(k.dur)}"]
    decoded = decode_kernel(k.name)
    config = [f"{f}={getattr(decoded, f)}" for f in _CONFIG_FIELDS if getattr(decoded, f, None) not in (None, "", ())]
    if decoded.ops:
        config.append("ops=" + "·".join(decoded.ops))
    if config:
        lines.append("  config: " + "  ".join(config))
    lines.append("  chain: " + (" → ".join(k.chain) or "(no CPU op linked)"))
    if trace is None or k.gpu_id < 0:
        return [*lines, "  raw: " + k.name]
    args = trace.gpu_args(k.gpu_id)
    geometry = [f"{f} {_fmt_arg(args[f])}" for f in _ARG_FIELDS if f in args]
    if geometry:
        lines.append("  launch: " + ", ".join(geometry))
    occ = _occupancy(trace, k.gpu_id)
    if occ:
        lines.append("  occupancy: " + occ)
    roof = _roofline(trace, k.gpu_id)
    if roof:
        lines.append("  roofline: " + roof)
    if k.name != k.short:
        lines.append("  raw: " + k.name)
    return lines


def pair_details(d: TraceDiff, row: DiffRow) -> list[str]:
    """Both sides of one diff row, A first."""
    head = f"{MARKERS[row.status]} {row.status}   A {duration(row.a_us)}   B {duration(row.b_us)}"
    if row.delta_us is not None:
        head += f"   Δ {fmt_delta(row.delta_us)}"
    lines = [head, ""]
    for label, side, trace, kernels in (("A", d.a, d.trace_a, row.a), ("B", d.b, d.trace_b, row.b)):
        lines.append(f"{label}  {side.label} · {side.device or 'unknown GPU'} · {side.step}")
        if not kernels:
            lines.append("  (nothing on this side)")
        for k in kernels:
            lines += ["  " + x for x in kernel_lines(trace, k)]
        lines.append("")
    return lines
