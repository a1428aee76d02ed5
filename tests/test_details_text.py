"""The details pane shows names as written: a kernel name holding an emoji code (`:o:`, as a mangled C++
name can: `… const::{lambda()#12} …` cut to `ctsn:o:{…`) is not turned into ⭕ (found by the fuzz target)."""

from __future__ import annotations

from mlptui.widgets.details import shown_text


def test_emoji_codes_in_a_name_stay_as_written() -> None:
    name = "void at::native::elementwise_kernel<lambda()#1}::operator()() ctsn:o:{lambda()#12}> :smile: :+1:"
    assert shown_text(f"[b]kernel[/b]\n  {name}").plain == f"kernel\n  {name}"


def test_control_characters_are_shown_as_escapes() -> None:
    assert shown_text("a\x1bb").plain == "a\\x1bb"
