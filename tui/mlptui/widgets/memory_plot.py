"""The memory curve of one device (the view's `v` steps through the devices): allocated (braille line) and reserved (· dots) over time, drawn by
textual-plotext. Two markers, not two colours, tell the lines apart, so it reads under NO_COLOR."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import RenderResult
from textual.message import Message
from textual_plotext import PlotextPlot
from textual_plotext.plot import Plot

from mlptui.trace.analysis.memory.memory import DeviceMemory
from mlptui.worker_pause import pausing_for_input

DrawKey = tuple[int, int, str, int]       # width, height, theme, generation of the curve
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
    """plotext draws the whole canvas as text (long enough to delay a key, the interpreter held): the text
    is drawn in a worker, on a figure of its own, once per curve, size and theme, and the pane is blank
    until it is ready, so the key that shows the memory view repaints at once and the curve follows.
    Showing the same curve again, or the view again, draws nothing."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._curve: tuple[DeviceMemory | None, tuple[int, int]] | None = None     # what is shown
        self._generation = 0
        self._text: tuple[DrawKey, Text] | None = None
        self._drawing: DrawKey | None = None

    @property
    def shown(self) -> DeviceMemory | None:
        """The device whose curve is shown (None: none yet, or a scope without memory events)."""
        return None if self._curve is None else self._curve[0]

    def render(self) -> RenderResult:
        key: DrawKey = (self.size.width, self.size.height, str(self.app.theme), self._generation)
        if self._text is not None and self._text[0] == key:
            return self._text[1]
        if self._drawing != key and self.size.width and self.size.height:
            self._drawing = key
            dev, position = self._curve or (None, None)     # none shown yet: an empty figure
            self._draw(key, dev, position, self._get_plotext_theme_name(self.app.theme))
        return Text()

    @work(thread=True, exclusive=True, exit_on_error=False, group="memory-plot")
    def _draw(self, key: DrawKey, dev: DeviceMemory | None, position: tuple[int, int] | None, theme: str) -> None:
        width, height = key[0], key[1]
        with pausing_for_input():
            plot = Plot()
            if position is not None:
                _plot_curve(plot, dev, position)
            plot.plotsize(width, height)
            plot._set_size(width, height)        # as PlotextPlot.render does: the size takes only so
            plot.theme(theme)
            text = Text.from_ansi(plot.build())
        self.post_message(self.Drawn(key, text))

    class Drawn(Message):
        def __init__(self, key: DrawKey, text: Text) -> None:
            self.key = key
            self.text = text
            super().__init__()

    def on_memory_plot_drawn(self, message: Drawn) -> None:
        message.stop()
        if message.key[3] == self._generation:      # not a curve shown before the last
            self._text = (message.key, message.text)
            self.refresh()
        if self._drawing == message.key:
            self._drawing = None

    def show(self, dev: DeviceMemory | None, position: tuple[int, int] = (0, 1)) -> None:
        """One device's curve; `position` (its index, how many devices) names the others in the title."""
        if self._curve is not None and self._curve[0] is dev and self._curve[1] == position:
            return
        self._curve = (dev, position)
        self._generation += 1
        self.refresh()


def _plot_curve(plt: Plot, dev: DeviceMemory | None, position: tuple[int, int]) -> None:
    if dev is None or not dev.ts:
        plt.title("no memory events")
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
