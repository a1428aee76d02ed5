"""Settings that are whole numbers, read from the environment.

A value is ASCII digits, at most MAX_DIGITS of them (Python's `int` would also take `٣`, `1_000` or a
401-digit number); an unset or empty one means the default. Anything else is ignored, and said:
`setting_problems()` gives one line per such setting, which each command prints as a warning and the
explorer shows when it starts.
"""

from __future__ import annotations

import os
import re

from mlptui.base.text import printable

MAX_DIGITS = 9
_WHOLE = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")

# each whole-number setting, and what is used when it is unset or refused
WHOLE_NUMBER_SETTINGS = {
    "MLPTUI_CACHE_MAX_MB": "the default cap, 2048 MB",
    "MLPTUI_MAX_INPUT_MB": "the machine's memory as the limit",
    "MLPTUI_DECODE_WORKERS": "as many workers as there are free CPUs",
}


def whole_number(name: str) -> int | None:
    """The setting `name` as a whole number, or None when it is unset, empty or not a whole number."""
    raw = os.environ.get(name, "").strip()
    return int(raw) if _WHOLE.fullmatch(raw) else None


def setting_problems() -> list[str]:
    """One line for each whole-number setting that is set but refused, saying what is used instead."""
    problems = []
    for name, instead in WHOLE_NUMBER_SETTINGS.items():
        raw = os.environ.get(name, "")
        if raw.strip() and whole_number(name) is None:
            shown = raw if len(raw) <= 40 else raw[:40] + "…"
            problems.append(f"{name}={printable(shown)!r} is not a whole number of at most {MAX_DIGITS} digits: "
                            f"ignored, {instead}")
    return problems
