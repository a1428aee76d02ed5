"""Text lanes on one time axis: each CPU thread (ops, launch calls) and each GPU stream.

Each lane is a sorted array of busy intervals; a column's shade is the busy fraction of its time
slice, computed for the visible columns only with two binary searches per column edge (numpy), so a
repaint costs the same for a 1 000-event and a 1 000 000-event trace. Idle GPU time shows as `·`.
A slice wide enough to hold a few letters carries its name. The ruler reads time since the trace's
first event at round ticks, so it moves with every pan and zoom.

An event cursor walks the lanes (`.` `,` the next and previous event on a lane, `j` `k` the lane below
and above, at the same time); each move posts `EventChosen` for the screen to select the event.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import numpy as np
from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from mlptui.keys import TIMELINE_KEYS
from mlptui.viewmodels import fmt
from mlptui.viewmodels.lanes import LABEL, Lane
from mlptui.widgets.kept import lru_get_or_make
from mlptui.widgets.plain_paint import PlainPaint

SHADES = " ░▒▓█"
NAME_MIN_COLS = 4          # a slice this many columns wide or more carries (the start of) its name
KEPT_VIEWS = 16            # timeline views (scope, zoom, selection) whose lane lines are kept
TICK_COLS = 14             # about one ruler tick per this many columns


def tick_step(span: float, cols: int) -> float:
    """A round tick interval (1, 2 or 5 × 10^k µs) giving about one tick per TICK_COLS columns."""
    raw = span * TICK_COLS / max(cols, 1)
    power = 10.0 ** np.floor(np.log10(raw)) if raw > 0 else 1.0
    for nice in (1.0, 2.0, 5.0, 10.0):
        if raw <= nice * power:
            return float(nice * power)
    return float(10 * power)


class Timeline(PlainPaint, ScrollView, can_focus=True):
    """The axis stays on the first line and the caption on the last; lanes scroll between them when
    a trace has more threads and streams than the pane has lines."""

    DEFAULT_CSS = """
    Timeline { height: auto; max-height: 14; overflow-x: hidden; overflow-y: auto; scrollbar-size-vertical: 1; }
    Timeline > .timeline--axis { color: $text-muted; }
    Timeline > .timeline--label { color: $text-primary; text-style: bold; }
    Timeline > .timeline--cpu { color: $text-secondary; }
    Timeline > .timeline--launch { color: $text-warning; }
    Timeline > .timeline--gpu { color: $text-success; }
    Timeline > .timeline--sync { color: $text-warning; }
    Timeline > .timeline--counter { color: $text-accent; }
    Timeline > .timeline--idle { color: $text-muted; }
    Timeline > .timeline--selected { background: $accent; color: $text; text-style: bold; }
    Timeline > .timeline--name { text-style: reverse; }
    Timeline > .timeline--cursor { text-style: reverse bold underline; }
    Timeline > .timeline--path { color: $text-error; text-style: bold underline; }
    """
    COMPONENT_CLASSES = {
        "timeline--axis", "timeline--label", "timeline--cpu", "timeline--launch", "timeline--gpu",
        "timeline--idle", "timeline--selected", "timeline--name", "timeline--cursor", "timeline--sync",
        "timeline--counter", "timeline--path",
    }
    BINDINGS = [*TIMELINE_KEYS]

    class EventChosen(Message):
        """The event cursor is on another event: an Op id (`kind` "op") or a GpuOp id ("gpu")."""

        def __init__(self, kind: str, ident: int) -> None:
            self.kind = kind
            self.ident = ident
            super().__init__()

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lanes: list[Lane] = []
        self.scope = (0.0, 1.0)
        self.start = 0.0
        self.span = 1.0
        self.cpu_marks: list[tuple[tuple[int, int], float, float]] = []
        self.gpu_marks: list[tuple[tuple[int, int], float, float]] = []
        self.caption = ""
        # lane lines drawn, by what they were drawn for (a step shown again draws from these), newest last
        self._kept: OrderedDict[tuple[object, ...], dict[int, Strip]] = OrderedDict()
        self.namer: Callable[[Lane, int], str] = lambda lane, i: ""
        self.cursor: tuple[int, int] | None = None     # (lane, interval) of the event cursor
        # the critical path lit: per (lane kind, lane key), its segments' starts and ends there
        self.path: dict[tuple[str, tuple[int, int]], tuple[np.ndarray, np.ndarray]] = {}
        self._path_drawn = 0        # bumped when the path changes (the kept lines are keyed by it)
        self._styles: dict[str, Style] = {}     # component styles, made once per style change

    def set_lanes(self, lanes: list[Lane], namer: Callable[[Lane, int], str] | None = None) -> None:
        """The lanes, and how to name interval i of a lane (its op's or kernel's name)."""
        self.lanes = lanes
        self.cursor = None
        self._kept.clear()      # the kept lines are keyed by the lanes' id, which a new list may reuse
        if namer is not None:
            self.namer = namer
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
        if (cpu, gpu, caption) == (self.cpu_marks, self.gpu_marks, self.caption):
            return
        self.cpu_marks, self.gpu_marks = cpu, gpu
        self.caption = caption
        self.refresh()

    def set_path(self, path: dict[tuple[str, tuple[int, int]], tuple[np.ndarray, np.ndarray]]) -> None:
        """Light these spans (a step's critical path) on their lanes; {} puts the path out."""
        if not path and not self.path:
            return
        self.path = path
        self._path_drawn += 1
        self.refresh()

    def point_at(self, lane_kind: str, key: tuple[int, int], ident: int, at_us: float) -> bool:
        """Put the event cursor on event `ident` of the lane (`lane_kind`, `key`), else on the lane's event
        nearest `at_us` (a nested op sits inside its lane's top-level one), and bring it into view; the
        caller shows the event. False when no such lane has events."""
        lane_index = next((i for i, lane in enumerate(self.lanes) if lane.kind == lane_kind and lane.key == key
                           and len(lane.starts)), -1)
        if lane_index < 0:
            return False
        lane = self.lanes[lane_index]
        hits = np.flatnonzero(lane.ids == ident)
        self.cursor = (lane_index, int(hits[0]) if len(hits) else lane.nearest(at_us))
        self._bring_cursor()
        return True

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
    def notify_style_update(self) -> None:
        self._styles.clear()
        self._kept.clear()
        super().notify_style_update()

    def _style(self, name: str) -> Style:
        """The widget's style with a component's over it ("": the widget's own)."""
        style = self._styles.get(name)
        if style is None:
            style = self.rich_style
            if name:
                style += self.get_component_rich_style(f"timeline--{name}", partial=True)
            self._styles[name] = style
        return style

    def _axis(self, width: int) -> Strip:
        """Ticks at round times since the trace's first event, labelled with that time; the view's width
        closes the line in words (`90.91 ms in view`), where a bare figure read as one more tick."""
        cols = width - LABEL
        span = f"  {fmt.us(self.span)} in view"
        if cols < len(span) + TICK_COLS:        # too narrow for both: the ticks
            span = ""
        ticks = cols - len(span)
        text = [" "] * max(ticks, 0)
        step = tick_step(self.span, cols)
        t = np.ceil(self.start / step) * step
        while ticks > 0 and t < self.start + self.span:
            c = int((t - self.start) / self.span * cols)
            label = "|" + fmt.us(abs(t) if abs(t) < step / 1e6 else t)
            if c + len(label) <= ticks and all(ch == " " for ch in text[max(c - 1, 0): c + len(label)]):
                text[c: c + len(label)] = label
            t += step
        return Strip([Segment("time".ljust(LABEL), self._style("label")), Segment("".join(text), self._style("axis")),
                      Segment(span, self._style("label"))])

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
            return Strip.blank(width, self._style(""))
        key = (width, self.start, self.span, id(self.lanes), len(self.cpu_marks), tuple(self.cpu_marks[:4]),
               tuple(self.gpu_marks[:16]), self.cursor, self._path_drawn)
        rows = lru_get_or_make(self._kept, key, dict, KEPT_VIEWS)
        strip = rows.get(index)
        if strip is None:
            label = Segment(self.lanes[index].label.ljust(LABEL), self._style("label"))
            strip = rows[index] = Strip([label, *self._lane_segments(self.lanes[index], width - LABEL, index)])
        return strip

    def _lane_segments(self, lane: Lane, cols: int, index: int) -> list[Segment]:
        edges = self.start + self.span * np.arange(cols + 1) / cols
        slice_us = self.span / cols
        frac = np.diff(lane.busy(edges)) / slice_us
        level = np.where(frac <= 0, 0, np.clip(np.ceil(frac * 4), 1, 4)).astype(int)
        marks = self.gpu_marks if lane.kind == "gpu" else self.cpu_marks
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
        cell_styles: list[Style | None] = [None] * cols
        self._names(lane, index, cols, slice_us, chars, cell_styles, base)
        lit = self._lit(lane, cols, slice_us)
        path_style = self._style("path")
        segments: list[Segment] = []
        run: list[str] = []
        run_style: Style | None = None
        for c, ch in enumerate(chars):
            style = cell_styles[c] or (styles[True] if selected[c] else (idle_style if ch == idle else base))
            if lit[c]:
                style = style + path_style
            if style is not run_style and run:
                segments.append(Segment("".join(run), run_style))
                run = []
            run_style = style
            run.append(ch)
        if run:
            segments.append(Segment("".join(run), run_style))
        return segments

    def _lit(self, lane: Lane, cols: int, slice_us: float) -> list[bool]:
        """Per column: a segment of the lit path covers part of it on this lane."""
        spans = self.path.get((lane.kind, lane.key))
        if spans is None:
            return [False] * cols
        starts, ends = spans
        seen = (ends >= self.start) & (starts <= self.start + self.span)
        a = np.clip((starts[seen] - self.start) // slice_us, 0, cols - 1).astype(np.int64)
        b = np.clip((ends[seen] - self.start) // slice_us, 0, cols - 1).astype(np.int64)
        edge = np.zeros(cols + 1, dtype=np.int64)
        np.add.at(edge, a, 1)
        np.add.at(edge, b + 1, -1)
        covered: list[bool] = (np.cumsum(edge[:cols]) > 0).tolist()
        return covered

    def _names(self, lane: Lane, index: int, cols: int, slice_us: float, chars: list[str],
               cell_styles: list[Style | None], base: Style) -> None:
        """Write each wide slice's name over its columns; the event under the cursor is drawn apart."""
        wide = lane.wide(self.start, self.start + self.span, NAME_MIN_COLS * slice_us).tolist()
        cursor = self.cursor[1] if self.cursor is not None and self.cursor[0] == index else -1
        if cursor >= 0 and cursor not in wide:
            wide.append(cursor)
        named = base + self._style("name")
        for i in wide[:cols]:
            a = max(0, int((lane.starts[i] - self.start) // slice_us))
            # the end rounded down: a name never runs into the next slice's first column
            b = min(cols, int((lane.starts[i] + lane.durs[i] - self.start) // slice_us))
            b = max(b, a + 1)
            if a >= cols:
                continue
            style = base + self._style("cursor") if i == cursor else named
            name = self.namer(lane, i) if b - a >= 2 else ""
            text = set_cell_size(name, b - a) if cell_len(name) <= b - a else set_cell_size(name, b - a - 1) + "…"
            for k, ch in enumerate(text if text.strip() else chars[a:b]):
                if a + k < cols:
                    chars[a + k] = ch
                    cell_styles[a + k] = style

    # -- the event cursor ------------------------------------------------------------------
    def _lane_of_view(self) -> int:
        """The lane the cursor starts on: the first GPU lane (kernels are what people look for), else the first."""
        return next((i for i, lane in enumerate(self.lanes) if lane.kind == "gpu" and len(lane.starts)), 0)

    def _chosen(self) -> None:
        if self.cursor is None:
            return
        lane_index, i = self.cursor
        lane = self.lanes[lane_index]
        self._bring_cursor()
        if int(lane.ids[i]) >= 0:           # a sync that no recorded call waited in has nothing to show
            self.post_message(self.EventChosen("gpu" if lane.kind == "gpu" else "op", int(lane.ids[i])))

    def _bring_cursor(self) -> None:
        """The cursor's event into view: its time across, its lane down."""
        if self.cursor is None:
            return
        lane_index, i = self.cursor
        lane = self.lanes[lane_index]
        start, end = float(lane.starts[i]), float(lane.starts[i] + lane.durs[i])
        if end < self.start or start > self.start + self.span:     # off screen: bring it to the middle
            self.start = (start + end) / 2 - self.span / 2
        top = round(self.scroll_offset.y)
        page = max(1, self.scrollable_content_region.height - 2)
        if not top <= lane_index < top + page:
            self.scroll_to(y=max(0, lane_index - page // 2), animate=False, immediate=True)
        self.refresh()

    def action_event_next(self, delta: int) -> None:
        """`.` `,`: the next or previous event on the cursor's lane (the first in view when there is none)."""
        if not self.lanes:
            return
        if self.cursor is None:
            lane_index = self._lane_of_view()
            lane = self.lanes[lane_index]
            i = lane.at_or_after(self.start)
            if i >= len(lane.starts):
                i = len(lane.starts) - 1
            if i < 0:
                return
            self.cursor = (lane_index, i)
        else:
            lane_index, i = self.cursor
            i = min(max(i + delta, 0), len(self.lanes[lane_index].starts) - 1)
            self.cursor = (lane_index, i)
        self._chosen()

    def action_event_lane(self, delta: int) -> None:
        """`j` `k`: the event of the lane below or above nearest the cursor's time (lanes without events skipped)."""
        if self.cursor is None:
            self.action_event_next(0)
            return
        lane_index, i = self.cursor
        lane = self.lanes[lane_index]
        t = float(lane.starts[i] + lane.durs[i] / 2)
        target = lane_index + delta
        while 0 <= target < len(self.lanes) and not len(self.lanes[target].starts):
            target += delta
        if not 0 <= target < len(self.lanes):
            return
        self.cursor = (target, self.lanes[target].nearest(t))
        self._chosen()
