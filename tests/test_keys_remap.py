"""MLPTUI_KEYS: every refused remap is said, in one line, with its reason (an unknown id, a malformed
pair or key, a key already taken where the binding works); the others apply. The `?` overlay keeps each
id on its key's row at 80 columns, and the picker's findings are read whole at 80×24."""

from __future__ import annotations

import pytest
from app_support import wait_for_screen
from conftest import find_sample
from textual.widgets import Static

from mlptui.app import make_app
from mlptui.keys import FOCUS_CHAINS, all_bindings, parse_user_keys
from mlptui.screens.help_screen import GROUPS, HelpScreen
from mlptui.screens.picker import PickerScreen


def test_unknown_malformed_and_clashing_remaps_are_refused_with_a_reason() -> None:
    keymap, problems = parse_user_keys("quit=ctrl+q,serch=x,quit,zoom-pane=ctrl z,search=s,help=?")
    assert keymap == {"quit": "ctrl+q", "help": "question_mark"}
    assert problems == [
        "unknown id 'serch' (? lists them)",
        "'quit' is not id=key",
        "zoom-pane=ctrl z: 'ctrl z' is not a key name (e.g. x, ctrl+q, f5, question_mark)",
        "search=s refused: s is already 'sort' (sort) in the kernels table",
    ]


def test_a_key_no_terminal_sends_is_refused_and_the_binding_keeps_its_key() -> None:
    # `foo` is spelled like a key name but names no key: `quit=foo` would leave no key that quits
    keymap, problems = parse_user_keys("quit=foo,help=ctrl+bar,search=f99,zoom-pane=shift+f5")
    assert keymap == {"zoom-pane": "shift+f5"}
    assert problems == [f"{pair}: {pair.split('=')[1]!r} is not a key name (e.g. x, ctrl+q, f5, question_mark)"
                        for pair in ("quit=foo", "help=ctrl+bar", "search=f99")]


def test_every_key_the_explorer_binds_is_a_key_name_a_remap_may_use() -> None:
    keys = {k.strip() for b in all_bindings() for k in b.key.split(",")}
    refused = [k for k, (_, problems) in ((k, parse_user_keys(f"quit={k}")) for k in keys)
               if any("is not a key name" in p for p in problems)]
    assert refused == []


async def test_quit_stays_on_q_when_its_remap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_KEYS", "quit=foo")
    app = make_app([str(find_sample("linear", "eager"))])
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert app.user_keys == {}
        assert [n.message for n in app._notifications] == [
            "MLPTUI_KEYS: quit=foo: 'foo' is not a key name (e.g. x, ctrl+q, f5, question_mark)"]
        await pilot.press("q")
    assert app.return_code == 0


def test_a_clash_is_checked_against_every_binding_where_the_key_works() -> None:
    # `s` sorts tables on the trace screen; once sort moves to `t`, `s` is free for search.
    assert parse_user_keys("sort=t,search=s") == ({"sort": "t", "search": "s"}, [])
    # the picker's `m` does not work on the trace screen, so `jump=m` takes nothing from anyone
    assert parse_user_keys("jump=m")[1] == []
    # but `c` opens the critical path where raw-names works (and jumps to the diff's CPU side, where the same
    # id works too): the first place it clashes is named
    assert parse_user_keys("raw-names=c")[1] == [
        "raw-names=c refused: c is already 'critical path' (view-critical) in the trace screen's steps list"]
    # every id the help lists can be remapped
    ids = {b.id for _, group in GROUPS for b in group} | {b.id for _, chain in FOCUS_CHAINS for g in chain for b in g}
    assert "search" in ids and "open-rank" in ids and "diff-swap" in ids


async def test_the_app_warns_once_and_applies_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_KEYS", "search=s,serch=x,quit=ctrl+q")
    app = make_app([str(find_sample("linear", "eager"))])
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        notes = [n.message for n in app._notifications]
        assert len(notes) == 1 and "\n" not in notes[0]
        assert notes[0].startswith("MLPTUI_KEYS: search=s refused") or "search=s refused" in notes[0]
        assert "unknown id 'serch'" in notes[0]
        assert app.user_keys == {"quit": "ctrl+q"}
        await pilot.press("ctrl+q")
    assert app.return_code == 0


async def test_the_help_keeps_each_id_on_its_keys_row_at_80_columns() -> None:
    app = make_app([str(find_sample("linear", "eager"))])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        screen = await wait_for_screen(app, pilot, HelpScreen)
        static = screen.query_one("#help-text", Static)
        width = static.content_region.width
        lines = static.render().wrap(width)
        rows = [line.plain.rstrip() for line in lines]
        ids = {b.id for _, group in GROUPS for b in group}
        assert not [row for row in rows if row.strip() in ids]          # no id on a row of its own
        key_rows = [r for r in rows if r.startswith("  ") and not r.startswith("   ")]
        for binding_id in ids:                                          # each at the end of its key's row
            assert any(r.split()[-1] == binding_id for r in key_rows), binding_id


async def test_the_picker_findings_are_read_whole_at_80x24() -> None:
    app = make_app([])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await wait_for_screen(app, pilot, PickerScreen)
        await app.workers.wait_for_complete()
        await pilot.press("4")
        await pilot.pause()
        static = screen.query_one("#picker-findings", Static)
        facts = app.facts_cache[screen.query_one("#picker-list").specs[3]]
        shown = [line.plain for line in static.render().wrap(static.content_region.width)]
        visible = " ".join(shown[:static.content_region.height])
        key_finding = facts.findings[0]
        assert " ".join(key_finding.split()) in " ".join(visible.split())
        assert "…" not in visible


def test_every_binding_group_is_in_a_focus_chain() -> None:
    """A new group of keys must say where it is active, or its clashes go unchecked."""
    from mlptui.keys import binding_groups

    chained = {id(group) for _, chain in FOCUS_CHAINS for group in chain}
    derived = {"_VIEW_KEYS", "_PROFILE_TABLE_KEYS"}       # parts of TRACE_KEYS and TABLE_KEYS
    missing = [name for name, group in binding_groups().items() if id(group) not in chained and name not in derived]
    assert missing == []
