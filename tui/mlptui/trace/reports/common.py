"""Small report types more than one report holds: a step's figures, the device's architecture, an integrity
problem. Fields are declared in the JSON's key order (the encoder writes a dataclass field by field)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class StepStats:
    """One step's timing and verdict (mlptui.trace.analysis.steps.steps defines each figure)."""

    index: int              # Step.index; -1 for "all steps" or a trace without steps
    name: str
    cpu_us: float
    gpu_busy_us: float
    gpu_idle_us: float
    kernels: int
    launches: int
    launch_overhead_us: float
    verdict: str
    window_us: float = 0.0          # step start to the later of its end and the end of its own GPU work
    device_busy_us: float = 0.0     # all work on the device within the window (any step's)
    device_idle_us: float = 0.0     # window minus device_busy_us


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceArch:
    vendor: str            # "NVIDIA", "AMD" or "unknown"
    arch: str | None       # "sm_90", "gfx942", or None when the trace does not say
    units: str             # what its compute units are called: "SMs", "CUs" or "units"
    count: int | None      # how many (deviceProperties numSms)

    @property
    def word(self) -> str:
        """How to name the device in a sentence: "sm90" on NVIDIA, "gfx942" on AMD, else "GPU"."""
        return self.arch.replace("sm_", "sm", 1) if self.arch else "GPU"


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """Something a trace lacks, or holds that no run could produce (mlptui.trace.analysis.steps.integrity)."""

    kind: str
    count: int
    detail: str
