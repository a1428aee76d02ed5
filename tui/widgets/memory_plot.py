"""The memory curve of one device (the view's `v` steps through the devices): allocated (braille line) and reserved (· dots) over time, drawn by
textual-plotext. Two markers, not two colours, tell the lines apart, so it reads under NO_COLOR."""

from __future__ import annotations

from textual_plotext import PlotextPlot

from mlptui.trace.analysis.memory import DeviceMemory

MAX_POINTS = 4000          # plotext draws every point it is given; the screen has far fewer cells
MIB = float(1 << 20)


def _thin(xs: list[float], ys: list[float], limit: int = MAX_POINTS) -> tuple[list[float], list[float]]:
    """Every k-th point, plus each stretch's maximum, so a thinned curve keeps its peaks."""
    if len(xs) <= limit:
        return xs, ys
    k = -(-len(xs) // (limit // 2))
    out_x: list[float] = []
    out_y: list[float] = []
    for i in range(0, len(xs), k):
        chunk = ys[i:i + k]
        j = max(range(len(chunk)), key=chunk.__getitem__)
        out_x += [xs[i], xs[i + j]]
        out_y += [ys[i], chunk[j]]
    return out_x, out_y


class MemoryPlot(PlotextPlot):
    shown: DeviceMemory | None = None

    def show(self, dev: DeviceMemory | None, position: tuple[int, int] = (0, 1)) -> None:
        """One device's curve; `position` (its index, how many devices) names the others in the title."""
        self.shown = dev
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        if dev is None or not dev.ts:
            plt.title("no memory events")
            self.refresh()
            return
        xs = [t / 1000.0 for t in dev.ts]
        x, y = _thin(xs, [a / MIB for a in dev.allocated])
        plt.plot(x, y, marker="braille", label="allocated")
        reserved = [(t, r / MIB) for t, r in zip(xs, dev.reserved, strict=True) if r is not None]
        if reserved:
            rx, ry = _thin([t for t, _ in reserved], [r for _, r in reserved])
            plt.plot(rx, ry, marker="·", label="reserved")
        plt.xlabel("ms")
        plt.ylabel("MiB")
        basis = "" if dev.totals_recorded else " (Σ Bytes since recording began)"
        others = f"  (device {position[0] + 1} of {position[1]}, v: next)" if position[1] > 1 else ""
        plt.title(f"{dev.label} allocated{basis}{others}")
        self.refresh()
