"""The key bar: the screen's shown keys drawn as one line by one widget.

Textual's Footer is one widget per key, composed again whenever the shown keys change: a screen pushed or
a view switched styles, lays out and paints a few dozen widgets before its first frame. This bar draws the
same cells (the compact footer's look, colour for colour: tests/test_key_bar.py compares them) from one
list of keys, and does nothing when a bindings refresh leaves the shown keys as they were.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.color import Color
from textual.strip import Strip
from textual.widget import Widget

from mlptui.widgets.plain_paint import PlainPaint, bare_style

if TYPE_CHECKING:
    from textual.css.styles import StylesBase
    from textual.screen import Screen

SCROLL_STEP = 4     # cells a mouse wheel notch slides a bar wider than the screen


@dataclass(frozen=True)
class Key:
    key: str            # what a click presses
    display: str        # what the bar shows for it
    description: str
    enabled: bool
    tooltip: str


@dataclass(frozen=True)
class Look:
    key: Style
    description: Style


class KeyBar(PlainPaint, Widget, can_focus=False):
    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"key-bar--item", "key-bar--disabled", "key-bar--hover", "key-bar--key",
                         "key-bar--description"}
    # The layers Textual's compact footer stacks for each key: the item, dimmed when the key is
    # disabled, lit under the mouse, then the key's and the description's own colours.
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        & > .key-bar--item { background: $footer-item-background; }
        & > .key-bar--disabled { text-style: dim; }
        & > .key-bar--hover { color: $footer-key-foreground; background: $block-hover-background; }
        & > .key-bar--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .key-bar--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.keys: tuple[Key, ...] = ()
        self._spans: list[tuple[int, int]] = []     # each key's cells on the bar
        self._hover: int | None = None
        self._offset = 0                            # cells slid left when the bar is wider than the screen
        self._looks: dict[tuple[bool, bool], Look] = {}
        self._strip: Strip | None = None

    # -- which keys -------------------------------------------------------------------------
    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def shown_keys(self, screen: Screen) -> tuple[Key, ...]:
        """The screen's active bindings marked to show, one per action (its first binding), in order."""
        keys: dict[str, Key] = {}
        for _node, binding, enabled, tooltip in screen.active_bindings.values():
            if binding.show and binding.action not in keys:
                keys[binding.action] = Key(binding.key, self.app.get_key_display(binding), binding.description,
                                           enabled, tooltip)
        return tuple(keys.values())

    def bindings_changed(self, screen: Screen) -> None:
        if screen is not self.screen:
            return
        keys = self.shown_keys(screen)
        if keys != self.keys:
            self.keys = keys
            self._hover = None
            self._strip = None
            self.refresh()

    # -- how they look ----------------------------------------------------------------------
    def notify_style_update(self) -> None:
        self._looks.clear()
        self._strip = None
        super().notify_style_update()

    def _stacked(self, *components: str) -> Style:
        """The style of a cell under this widget's ancestors, itself and then `components`, composed as
        Textual composes a widget's style from its ancestors (backgrounds blended, the last colour wins,
        text styles added)."""
        layers: list[StylesBase] = [node.styles for node in reversed(self.ancestors_with_self)]
        layers += [self.get_component_styles(name) for name in components]
        background = Color(0, 0, 0, 0)
        color = Color(255, 255, 255, 0)
        style = Style()
        opacity = 1.0
        for styles in layers:
            opacity *= styles.opacity
            if styles.has_rule("background"):
                background += styles.background.tint(styles.background_tint).multiply_alpha(opacity)
            if styles.has_rule("color"):
                color = styles.color
            style += styles.text_style
        return style + Style.from_color((background + color).rich_color if (background.a or color.a) else None,
                                        background.rich_color if background.a else None)

    def _look(self, enabled: bool, hover: bool) -> Look:
        look = self._looks.get((enabled, hover))
        if look is None:
            item = ["key-bar--item"] + ([] if enabled else ["key-bar--disabled"]) + (["key-bar--hover"] if hover else [])
            look = Look(self._stacked(*item, "key-bar--key"), self._stacked(*item, "key-bar--description"))
            self._looks[(enabled, hover)] = look
        return look

    # -- drawing ----------------------------------------------------------------------------
    def _bar(self) -> Strip:
        if self._strip is None:
            gap = bare_style(self)
            segments: list[Segment] = []
            spans: list[tuple[int, int]] = []
            x = 0
            for i, key in enumerate(self.keys):
                look = self._look(key.enabled, i == self._hover)
                segments.append(Segment(key.display, look.key))
                if key.description:
                    segments.append(Segment(" " + key.description, look.description))
                width = cell_len(key.display) + (1 + cell_len(key.description) if key.description else 0)
                spans.append((x, x + width))
                segments.append(Segment(" ", gap))
                x += width + 1
            self._spans = spans
            self._strip = Strip(segments)
        return self._strip

    def render_line(self, y: int) -> Strip:
        bar = self._bar()
        if not self._offset:
            return bar
        return bar.crop(self._offset, bar.cell_length)

    # -- the mouse --------------------------------------------------------------------------
    def _key_at(self, x: int) -> int | None:
        x += self._offset
        self._bar()
        return next((i for i, (start, end) in enumerate(self._spans) if start <= x < end), None)

    def _set_hover(self, index: int | None) -> None:
        if index != self._hover:
            self._hover = index
            self._strip = None
            self.styles.pointer = "default" if index is None else "pointer"
            self.tooltip = self.keys[index].tooltip or None if index is not None else None
            self.refresh()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._set_hover(self._key_at(event.x))

    def on_leave(self, event: events.Leave) -> None:
        self._set_hover(None)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        index = self._key_at(event.x)
        if index is None:
            return
        if self.keys[index].enabled:
            self.app.simulate_key(self.keys[index].key)
        else:
            self.app.bell()

    def _slide(self, by: int) -> None:
        widest = max(0, self._bar().cell_length - self.size.width)
        offset = max(0, min(widest, self._offset + by))
        if offset != self._offset:
            self._offset = offset
            self._set_hover(None)
            self.refresh()

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        self._slide(SCROLL_STEP)
        event.stop()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self._slide(-SCROLL_STEP)
        event.stop()
