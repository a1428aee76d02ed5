"""Tables as CSV: the text (`csv_text`, for `x` and `summary --csv`), and the file the explorer writes with
`x` (`export_csv`). A text cell that a spreadsheet would run as a formula is written as text (`as_text`).

The explorer never writes beside a trace: exports go to the folder named by MLPTUI_EXPORT_DIR, else to
`mlptui-exports/` in the current directory. A file appears whole or not at all (written to a temporary
name, then linked to its final name) and never replaces another: a taken name gets `-2`, `-3`, ….
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from mlptui.base.files import temp_path

EXPORT_DIR_ENV = "MLPTUI_EXPORT_DIR"
_FORMULA_STARTS = frozenset("=+-@\t\r")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """RFC 4180 CSV: None as an empty cell, lists and dicts as JSON, numbers as Python writes them, and
    text that a spreadsheet would run as a formula written as text (`as_text`). Lines end in CRLF, as the
    RFC says: the writer then quotes a cell holding a lone carriage return, which would otherwise split
    its row for a reader."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([_cell(h) for h in header])
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return out.getvalue()


def dict_rows_csv(rows: Sequence[Any]) -> str:
    """Rows of one shape (a report's rows: typed, or dicts) as CSV, the fields (keys) of the first as the
    header."""
    plain = [row if isinstance(row, dict) else {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}
             for row in rows]
    header = list(plain[0]) if plain else []
    return csv_text(header, ([row.get(k) for k in header] for row in plain))


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, list | dict | tuple):
        return as_text(orjson.dumps(value).decode())
    if isinstance(value, str):
        return as_text(value)
    return value


def as_text(cell: str) -> str:
    """A cell that a spreadsheet would read as a formula (it begins with `=`, `+`, `-`, `@`, a tab or a
    carriage return: an op named `=HYPERLINK(…)` would run) with `'` in front, which spreadsheets read as
    "this cell is text" (OWASP, CSV Injection). A cell that is a number, `-1.5` or `+3e4`, stays a number."""
    if cell[:1] in _FORMULA_STARTS and not _NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def export_folder() -> Path:
    named = os.environ.get(EXPORT_DIR_ENV)
    return Path(named).expanduser() if named else Path.cwd() / "mlptui-exports"


def safe_stem(text: str) -> str:
    """A file-name part from a trace's or view's name: letters, digits, `.`, `-`, `_` only."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return stem[:160] or "table"


def trace_stem(source: str) -> str:
    """A trace's file name without its folder and its trace suffixes (.pt.trace.json.gz, .json, …)."""
    name = source.rstrip("/").rsplit("/", 1)[-1]
    for suffix in (".gz", ".json", ".trace", ".pt"):
        name = name.removesuffix(suffix)
    return name


def export_csv(stem: str, text: str, folder: Path | None = None) -> Path:
    """Write `text` to `<folder>/<stem>.csv`, or `<stem>-2.csv`, … when taken; the path written."""
    folder = export_folder() if folder is None else folder
    folder.mkdir(parents=True, exist_ok=True)
    stem = safe_stem(stem)
    tmp = temp_path(folder, stem + ".csv")
    try:
        tmp.write_text(text, encoding="utf-8")
        for n in range(1, 10_000):
            target = folder / (f"{stem}.csv" if n == 1 else f"{stem}-{n}.csv")
            try:
                os.link(tmp, target)        # fails when the name is taken: nothing is ever replaced
            except FileExistsError:
                continue
            return target.resolve()
        raise FileExistsError(f"no free name for {stem}.csv in {folder}")
    finally:
        tmp.unlink(missing_ok=True)
