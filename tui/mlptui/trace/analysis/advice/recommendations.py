"""Recommendations: fixed rules over the overview, operators and kernels; only rules that fire are
returned, each with the figures that fired it, the device it was judged for and the device types and
architectures the rule applies to (`applies_to`); thresholds are the constants below.

- dataloader (any device): DataLoader time ≥ DATALOADER_SHARE of the scope's step time → more
  `num_workers`, `pin_memory=True`, prefetching.
- graph_capture (any device): the trace records a CUDA/HIP graph capture (mlptui.trace.analysis.
  graph_capture): most launch calls were captured into a graph, not run; it replaces low_gpu_util, which
  would be wrong here.
- low_gpu_util (any device that ran kernels): utilisation < LOW_GPU_UTIL over the scope.
- launch_bound (NVIDIA and AMD GPUs, whose launch calls return before the kernel runs): ≥
  LAUNCH_BOUND_SHARE of the kernels (at least MIN_KERNELS) run for less time than the host call that
  launched them → CUDA/HIP graphs, torch.compile. A kernel that ran and finished inside its own launch
  call shows a launch that blocked (MTIA's submission waits for the work): it is not launch overhead,
  and is left out of the count.
- tensor_cores (NVIDIA sm_70 and newer; AMD CDNA, gfx908 and newer): the kernels actually launched by
  Tensor-Core-eligible ops (GEMMs, convolutions) whose own kernels run mostly off Tensor Cores (tc_share
  < 0.5) take ≥ TC_MISS_SHARE of kernel time off them, leaving out what autocast cannot change or the
  name cannot tell (mlptui.trace.analysis.advice.tc_miss: f32 upcasts inside an op whose inputs are 16-bit, as
  SDPA's math backend makes; Triton kernels) → on sm_80 and newer TF32 or bf16 autocast; on Volta and Turing (sm_70, sm_72, sm_75) fp16
  autocast, as they have neither TF32 nor bf16; on AMD matrix cores bf16/fp16 autocast. No rule where the
  trace does not name the architecture, or the device has no matrix units.
- memcpy (any device): memcpy time ≥ MEMCPY_SHARE of the step time → keep data on the device, pinned
  memory and `non_blocking=True`, fewer `.item()`/`.cpu()` calls.
- small_kernels (NVIDIA and AMD GPUs, which torch.compile's Inductor generates fused Triton kernels for):
  ≥ SMALL_KERNEL_SHARE of the kernels (at least MIN_KERNELS) are pointwise or reduction kernels shorter
  than SMALL_KERNEL_US → torch.compile would fuse chains of them.
"""

from __future__ import annotations

import numpy as np

from mlptui.trace.analysis.advice.tc_miss import TcMiss, tc_miss
from mlptui.trace.analysis.events.device_arch import DeviceArch, device_arch
from mlptui.trace.analysis.events.graph_capture import MIN_CAPTURED, graph_capture
from mlptui.trace.analysis.events.tables import TraceColumns, tables
from mlptui.trace.analysis.kernels.occupancy import device_for
from mlptui.trace.analysis.operators.operators import OpGroup
from mlptui.trace.model import KERNEL, MEMCPY, Trace
from mlptui.trace.names.kernel import decode_kernel
from mlptui.trace.reports.profile import OverviewReport, Recommendation

DATALOADER_SHARE = 0.05
LOW_GPU_UTIL = 0.5
LAUNCH_BOUND_SHARE = 0.5
MIN_KERNELS = 10
TC_MISS_SHARE = 0.10
MEMCPY_SHARE = 0.05
SMALL_KERNEL_SHARE = 0.5
SMALL_KERNEL_US = 10.0


def _in_scope(trace: Trace, t: TraceColumns) -> np.ndarray:
    """Per GPU op: launched in the scope's step(s) (the whole trace when it has no steps)."""
    return np.ones(t.n_gpu, dtype=bool) if not trace.steps else t.gpu_step >= 0


ANY_DEVICE = "any device"
ASYNC_GPUS = "NVIDIA and AMD GPUs (asynchronous launches)"
MATRIX_UNITS = "NVIDIA sm_70 and newer, AMD CDNA (gfx908 and newer)"
INDUCTOR_GPUS = "NVIDIA and AMD GPUs (torch.compile's Triton backend)"
_CDNA = ("gfx908", "gfx90a", "gfx94", "gfx95")


def device_kind(trace: Trace, device: int | None) -> tuple[str, DeviceArch]:
    """What the scope's main device is, in words (`NVIDIA sm_70`, `AMD gfx942`, `MTIA`, `unknown device`)."""
    props = device_for(trace, device) if device is not None else trace.device
    info = device_arch(props, trace.meta)
    if info.vendor in ("NVIDIA", "AMD"):
        return f"{info.vendor} {info.arch}" if info.arch else info.vendor, info
    process = str((trace.meta.get("process_names") or {}).get(str(device), ""))
    return ("MTIA" if process.startswith("MTIA") else "unknown device"), info


def _tc_advice(info: DeviceArch) -> str | None:
    """How to get the device's matrix units used; None where it has none the trace can show."""
    if info.vendor == "NVIDIA" and info.arch:
        sm = int("".join(c for c in info.arch if c.isdigit()) or 0)
        if sm >= 80:
            return "use TF32 (torch.set_float32_matmul_precision('high')) or bf16 autocast"
        if sm >= 70:
            return ("use fp16 autocast (torch.autocast('cuda', dtype=torch.float16)), the only floating-point "
                    "type Volta's and Turing's Tensor Cores take")
        return None
    if info.vendor == "AMD" and info.arch and info.arch.startswith(_CDNA):
        return "use bf16 or fp16 autocast on the matrix cores"
    return None


def recommendations(trace: Trace, overview: OverviewReport, ops: list[OpGroup],
                    step: int | None = None) -> list[Recommendation]:
    """The rules that fire over the scope: every step (the whole trace when it has none) or `step`;
    `overview` and `ops` must be of the same scope."""
    out: list[Recommendation] = []
    kind, info = device_kind(trace, overview.main_device)
    gpu = info.vendor in ("NVIDIA", "AMD")
    total = overview.total
    duration = total.duration_us or 0.0
    parts = total.breakdown_us
    t = tables(trace)
    scope = _in_scope(trace, t) if step is None else t.gpu_step == step
    kernels = np.flatnonzero(t.gpu_is((KERNEL,)) & scope)
    kernel_dur = t.gpu_dur[kernels]
    kernel_us = sum(kernel_dur.tolist())

    if duration and parts["dataloader"] / duration >= DATALOADER_SHARE:
        share = parts["dataloader"] / duration
        out.append(Recommendation(rule="dataloader", message=(
            f"the DataLoader takes {share:.0%} of the step time: raise num_workers, set pin_memory=True, "
            "prefetch"), applies_to=ANY_DEVICE,
            figures={"device": kind, "dataloader_us": round(parts["dataloader"], 3), "step_us": round(duration, 3),
                     "share": round(share, 4), "threshold": DATALOADER_SHARE}))
    util = total.gpu_util
    capture = graph_capture(trace)
    if capture is not None:
        out.append(Recommendation(rule="graph_capture", message=capture.line(), applies_to=ANY_DEVICE,
                                  figures={"device": kind, "launch_calls": capture.launches,
                                           "captured": capture.captured, "kernels": capture.kernels,
                                           "capture_calls": capture.markers, "threshold": MIN_CAPTURED}))
    elif len(kernels) and util is not None and util < LOW_GPU_UTIL:
        out.append(Recommendation(rule="low_gpu_util", message=(
            f"the GPU runs kernels {util:.0%} of the step time: the host, data loading or synchronisation "
            "sets the pace"), applies_to=ANY_DEVICE,
            figures={"device": kind, "gpu_util": util, "threshold": LOW_GPU_UTIL}))
    launch = t.gpu_launch[kernels]
    launched = launch >= 0  # a kernel with no launch call (or a trace with no CPU ops) is not compared
    calls = launch[launched]
    ends = t.gpu_ts[kernels][launched] + kernel_dur[launched]
    blocked = (t.gpu_ts[kernels][launched] >= t.op_ts[calls]) & (ends <= t.op_ts[calls] + t.op_dur[calls])
    short = int(((kernel_dur[launched] < t.op_dur[calls]) & ~blocked).sum())
    if gpu and len(kernels) >= MIN_KERNELS and short / len(kernels) >= LAUNCH_BOUND_SHARE:
        graphs = "HIP graphs" if info.vendor == "AMD" else "CUDA graphs"
        out.append(Recommendation(rule="launch_bound", message=(
            f"{short} of {len(kernels)} kernels run for less time than their launch call: launch-bound; "
            f"{graphs} or torch.compile (mode='reduce-overhead') cut the launches"), applies_to=ASYNC_GPUS,
            figures={"device": kind, "kernels": len(kernels), "shorter_than_launch": short,
                     "inside_their_launch": int(blocked.sum()), "share": round(short / len(kernels), 4),
                     "threshold": LAUNCH_BOUND_SHARE}))
    miss = tc_miss(trace, ops) if gpu else TcMiss()
    missed_us = miss.missed_us
    advice = _tc_advice(info)
    if advice and kernel_us and missed_us / kernel_us >= TC_MISS_SHARE:
        units = "matrix cores" if info.vendor == "AMD" else "Tensor Cores"
        out.append(Recommendation(rule="tensor_cores", message=(
            f"matrix products and convolutions spend {missed_us / kernel_us:.0%} of kernel time off {units} "
            f"of this {kind}: {advice}"), applies_to=MATRIX_UNITS,
            figures={"device": kind, "off_tc_us": round(missed_us, 3), "kernel_us": round(kernel_us, 3),
                     "share": round(missed_us / kernel_us, 4), "threshold": TC_MISS_SHARE,
                     "ops": miss.ops[:5], "sixteen_bit_us": round(miss.sixteen_bit_us, 3),
                     "upcast_us": round(miss.upcast_us, 3), "triton_us": round(miss.unknown_us, 3)}))
    copies = np.flatnonzero(t.gpu_is((MEMCPY,)) & scope)
    h2d = np.flatnonzero(t.names_where(_host_device, t.gpu_name[copies])[t.gpu_name[copies]])
    memcpy_share = parts["memcpy"] / duration if duration else 0.0
    if len(copies) and memcpy_share >= MEMCPY_SHARE:
        out.append(Recommendation(rule="memcpy", message=(
            f"memcpy takes {memcpy_share:.0%} of the step time ({len(h2d)} host↔device copies): keep "
            "data on the device, use pinned memory and non_blocking=True, avoid .item()/.cpu() in the loop"),
            applies_to=ANY_DEVICE,
            figures={"device": kind, "memcpy_us": round(sum(t.gpu_dur[copies].tolist()), 3),
                     "share": round(memcpy_share, 4), "threshold": MEMCPY_SHARE, "host_device_copies": len(h2d)}))
    names = t.gpu_name[kernels]
    fusable = t.names_where(lambda s: decode_kernel(s).family in ("pointwise", "reduction"), names)
    small_dur = kernel_dur[(kernel_dur < SMALL_KERNEL_US) & fusable[names]].tolist()
    if gpu and len(kernels) >= MIN_KERNELS and len(small_dur) / len(kernels) >= SMALL_KERNEL_SHARE:
        out.append(Recommendation(rule="small_kernels", message=(
            f"{len(small_dur)} of {len(kernels)} kernels are pointwise/reduction kernels under "
            f"{SMALL_KERNEL_US:g} µs: torch.compile would fuse chains of them"), applies_to=INDUCTOR_GPUS,
            figures={"device": kind, "small_kernels": len(small_dur), "kernels": len(kernels),
                     "share": round(len(small_dur) / len(kernels), 4), "threshold": SMALL_KERNEL_SHARE,
                     "small_us": round(sum(small_dur), 3)}))
    return out


def _host_device(name: str) -> bool:
    n = name.replace(" ", "")
    return any(tag in n for tag in ("HtoD", "DtoH", "Host->Device", "Device->Host", "HtoA", "AtoH", "PtoD",
                                    "DtoP"))
