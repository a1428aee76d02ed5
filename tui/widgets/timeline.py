"""Text lanes on one time axis: each CPU thread (ops, launch calls) and each GPU stream.

Each lane is a sorted array of busy intervals; a column's shade is the busy fraction of its time
slice, computed for the visible columns only with two binary searches per column edge (numpy), so a
repaint costs the same for a 1 000-event and a 1 000 000-event trace. Idle GPU time shows as `·`.
"""

from __future__ import annotations

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from mlptui.keys import TIMELINE_KEYS
from mlptui.viewmodels import fmt
from mlptui.viewmodels.lanes import LABEL, Lane

SHADES = " ░▒▓█"


class Timeline(ScrollView, can_focus=True):
    """The axis stays on the first line and the caption on the last; lanes scroll between them when
    a trace has more threads and streams than the pane has lines."""

    DEFAULT_CSS = """
    Timeline { height: auto; max-height: 14; overflow-x: hidden; overflow-y: auto; scrollbar-size-vertical: 1; }
    Timeline > .timeline--axis { color: $text-muted; }
    Timeline > .timeline--label { color: $text-primary; text-style: bold; }
    Timeline > .timeline--cpu { color: $text-secondary; }
    Timeline > .timeline--launch { color: $text-warning; }
    Timeline > .timeline--gpu { color: $text-success; }
    Timeline > .timeline--idle { color: $text-muted; }
    Timeline > .timeline--selected { background: $accent; color: $text; text-style: bold; }
    """
    COMPONENT_CLASSES = {
        "timeline--axis", "timeline--label", "timeline--cpu", "timeline--launch", "timeline--gpu",
        "timeline--idle", "timeline--selected",
    }
    BINDINGS = [*TIMELINE_KEYS]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lanes: list[Lane] = []
        self.scope = (0.0, 1.0)
        self.start = 0.0
        self.span = 1.0
        self.cpu_marks: list[tuple[tuple[int, int], float, float]] = []
        self.gpu_marks: list[tuple[tuple[int, int], float, float]] = []
        self.caption = ""
        self._rows: dict[int, list[Segment]] = {}
        self._rows_key: tuple[object, ...] = ()     # what the cached rows were drawn for

    def set_lanes(self, lanes: list[Lane]) -> None:
        self.lanes = lanes
        self.virtual_size = Size(max(self.size.width, LABEL + 1), len(lanes) + 2)
        self.refresh(layout=True)

    def on_resize(self) -> None:
        self.virtual_size = Size(max(self.scrollable_content_region.width, LABEL + 1), len(self.lanes) + 2)

    def show_scope(self, start: float, end: float) -> None:
        self.scope = (start, max(end, start + 1e-3))
        self.action_zoom_reset()

    def set_marks(self, cpu: list[tuple[tuple[int, int], float, float]],
                  gpu: list[tuple[tuple[int, int], float, float]], caption: str = "") -> None:
        """Highlight the selection: CPU spans on their thread's lane, GPU spans on their stream's."""
        self.cpu_marks, self.gpu_marks = cpu, gpu
        self.caption = caption
        self.refresh()

    # -- keys --------------------------------------------------------------------------------
    def action_zoom_in(self) -> None:
        self._zoom(0.5)

    def action_zoom_out(self) -> None:
        self._zoom(2.0)

    def _zoom(self, factor: float) -> None:
        marks = self.cpu_marks or self.gpu_marks
        if marks:
            center = (min(m[1] for m in marks) + max(m[2] for m in marks)) / 2
        else:
            center = self.start + self.span / 2
        self.span = max(self.span * factor, 0.05)
        self.start = center - self.span / 2
        self.refresh()

    def action_pan_right(self) -> None:
        self.start += self.span / 4
        self.refresh()

    def action_pan_left(self) -> None:
        self.start -= self.span / 4
        self.refresh()

    def action_zoom_reset(self) -> None:
        start, end = self.scope
        pad = (end - start) * 0.02
        self.start, self.span = start - pad, (end - start) + 2 * pad
        self.refresh()

    # -- drawing -----------------------------------------------------------------------------
    def _style(self, name: str) -> Style:
        return self.rich_style + self.get_component_rich_style(f"timeline--{name}", partial=True)

    def _axis(self, width: int) -> Strip:
        cols = width - LABEL
        text = [" "] * max(cols, 0)
        step = max(12, cols // 6)
        for c in range(0, max(cols - 8, 0), step):
            label = "|+" + fmt.us(self.span * c / cols) if c else "|0"
            for k, ch in enumerate(label):
                if c + k < cols:
                    text[c + k] = ch
        return Strip([Segment(fmt.us(self.span).ljust(LABEL), self._style("label")), Segment("".join(text), self._style("axis"))])

    def render_line(self, y: int) -> Strip:
        region = self.scrollable_content_region
        width = region.width
        if y == 0:
            return self._axis(width)
        if y == region.height - 1:
            text = ("highlighted: " + self.caption)[: max(width - LABEL, 0)] if self.caption else ""
            return Strip([Segment(" " * LABEL, self._style("axis")), Segment(text.ljust(width - LABEL), self._style("axis"))])
        index = round(self.scroll_offset.y) + y - 1
        if index >= len(self.lanes) or width <= LABEL:
            return Strip.blank(width, self.rich_style)
        key = (width, self.start, self.span, id(self.lanes), len(self.cpu_marks), tuple(self.cpu_marks[:4]),
               tuple(self.gpu_marks[:16]))
        if key != self._rows_key:
            self._rows, self._rows_key = {}, key
        segments = self._rows.get(index)
        if segments is None:
            segments = self._lane_segments(self.lanes[index], width - LABEL)
            self._rows[index] = segments
        return Strip([Segment(self.lanes[index].label.ljust(LABEL), self._style("label")), *segments])

    def _lane_segments(self, lane: Lane, cols: int) -> list[Segment]:
        edges = self.start + self.span * np.arange(cols + 1) / cols
        slice_us = self.span / cols
        frac = np.diff(lane.busy(edges)) / slice_us
        level = np.where(frac <= 0, 0, np.clip(np.ceil(frac * 4), 1, 4)).astype(int)
        marks = self.gpu_marks if lane.kind == "gpu" else self.cpu_marks if lane.kind == "cpu" else []
        selected = np.zeros(cols, dtype=bool)
        for key, start, end in marks:
            if key == lane.key and end >= self.start and start <= self.start + self.span:
                a = int(max(0, (start - self.start) // slice_us))
                b = int(min(cols - 1, (end - self.start) // slice_us))
                selected[a: b + 1] = True
        idle = "·" if lane.kind == "gpu" else " "
        chars = [SHADES[v] if v else idle for v in level.tolist()]
        base = self._style(lane.kind)
        styles = {False: base, True: base + self._style("selected")}
        idle_style = self._style("idle")
        segments: list[Segment] = []
        run: list[str] = []
        run_style: Style | None = None
        for c, ch in enumerate(chars):
            style = styles[True] if selected[c] else (idle_style if ch == idle else base)
            if style is not run_style and run:
                segments.append(Segment("".join(run), run_style))
                run = []
            run_style = style
            run.append(ch)
        if run:
            segments.append(Segment("".join(run), run_style))
        return segments
