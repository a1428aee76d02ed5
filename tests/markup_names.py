"""Traces whose every name looks like Textual markup, and the screen read back as text.

`marked(src, dest)` writes a copy of a real trace where each name (ops, kernels, launch calls, steps,
Python frames, modules, threads, arg keys and values, the device) carries MARK: a closing tag with
nothing to close (Textual raises MarkupError on it), a bold tag (silently eaten if read as markup), an escaped
bracket (Textual and Rich read a backslash before a bracket differently) and a click action (a link that
quits if read as markup). Shown literally, MARK reads as written."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from textual.app import App

MARK = "[/][b]B\\[i]I[@click=app.quit]Q"
SHOWN = "[/][b]B"        # the part of MARK that survives a cell cut short


def _marked_args(args: Any) -> Any:
    if not isinstance(args, dict):
        return args
    out = {k: (v + MARK if isinstance(v, str) else v) for k, v in args.items()}
    out[f"note{MARK}"] = f"value{MARK}"
    return out


def marked(src: Path, dest: Path) -> Path:
    """A copy of the trace at `src` (gzipped JSON) at `dest` (plain JSON) with MARK in every name."""
    doc = json.loads(gzip.decompress(src.read_bytes()))
    for event in doc["traceEvents"]:
        name = event.get("name")
        if event.get("ph") == "X" and isinstance(name, str):
            # steps keep their prefix and kernels theirs (names are read from the left): MARK goes last
            event["name"] = name + " " + MARK
            event["args"] = _marked_args(event.get("args"))
        elif event.get("ph") == "M" and isinstance(event.get("args"), dict) and "name" in event["args"]:
            event["args"]["name"] = f"{event['args']['name']} {MARK}"
    for device in doc.get("deviceProperties") or []:
        device["name"] = f"{device.get('name', '')} {MARK}"
    dest.write_text(json.dumps(doc))
    return dest


def screen_text(app: App) -> str:
    """What the terminal shows now, one line per row: panes, titles, notifications and the key bar."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())
