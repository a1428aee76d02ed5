"""What the kernels table shows of one GPU op, computed from the trace once per op and kept: its decoded
name, theoretical occupancy and roofline. The table asks only for the rows on screen (and a sort asks
for its one column), so a million-kernel trace costs what is looked at."""

from __future__ import annotations

from mlptui.base.units import bandwidth, throughput
from mlptui.trace.analysis.kernels.kernel_inputs import kernel_name
from mlptui.trace.analysis.kernels.occupancy import Occupancy, kernel_occupancy
from mlptui.trace.analysis.kernels.roofline import Roofline, kernel_roofline
from mlptui.trace.model import Trace
from mlptui.trace.names.kernel import KernelName


class KernelFacts:
    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self._occ: dict[int, Occupancy | None] = {}
        self._roof: dict[int, Roofline | None] = {}

    def decoded(self, gid: int) -> KernelName:
        return kernel_name(self.trace, self.trace.gpu[gid].name)     # cached by name in the core

    def occupancy(self, gid: int) -> Occupancy | None:
        if gid not in self._occ:
            self._occ[gid] = kernel_occupancy(self.trace, gid)
        return self._occ[gid]

    def roofline(self, gid: int) -> Roofline | None:
        if gid not in self._roof:
            self._roof[gid] = kernel_roofline(self.trace, gid)
        return self._roof[gid]

    def perf(self, gid: int) -> tuple[str, float | None]:
        """The achieved rate as text ("12.3 TFLOP/s" or "850.0 GB/s") and the % of the device's peak."""
        roof = self.roofline(gid)
        if roof is None:
            return "", None
        text = ""
        if roof.bound == "compute" and roof.tflops is not None:
            text = throughput(roof.tflops)
        elif roof.gbps is not None:
            text = bandwidth(roof.gbps)
        return text, roof.pct_of_peak
