"""Text shown exactly as written. Textual reads a plain string given to a border title, a `Static` or a
notification as markup: a name like `evil[/]op` stops the app, `[b]` is eaten and `[@click=app.quit]`
becomes a link. Names from traces, paths, searches and settings go through `literal` instead."""

from __future__ import annotations

from textual.content import Content

from mlptui.base.text import printable


def literal(text: str) -> Content:
    """`text` (control characters spelled out) as content that Textual shows as it is."""
    return Content(printable(text))
