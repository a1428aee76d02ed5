"""The expectations file beside traces: `expect.toml` in the traces' folder, read by `mlptui check` and by
the app (which shows the mismatches first). Reading only: the viewer never writes beside a trace.

    # what we guess each trace shows, before looking
    expect = ["no memcpy"]                       # optional: for every trace of the folder

    [[trace]]
    match = "attention-sdpa-flash-*"             # a glob on the trace's file name
    expect = ["kernels per step == 1", "attention kernel: flash", "tensor cores: all GEMMs"]

TOML is read with the standard library's tomllib (Python 3.11+), else the `tomli` package when it is
installed; on Python 3.10 without tomli, reading the file is a one-line error. Only a regular file of at
most MAX_BYTES is read: a named pipe or a device (`/dev/zero`) is refused before any read.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

from mlptui.base.errors import TraceError
from mlptui.base.regular_file import read_regular, shown
from mlptui.trace.analysis.expectations.expectations import ExpectationError

EXPECT_FILE = "expect.toml"
MAX_BYTES = 1 << 20      # a real expectations file holds a few lines; a bigger one is not one


def _toml_loads(text: str) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:      # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef, import-not-found, unused-ignore]
        except ModuleNotFoundError:
            raise ExpectationError("reading an expectations file needs Python 3.11+ or the tomli package "
                                   "(pip install tomli); --expect works without it") from None
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ExpectationError(f"not valid TOML: {exc}") from None
    except ValueError:      # an integer of more digits than Python turns into a number (4,300)
        raise ExpectationError("not valid TOML: a number too long to read") from None
    return data


def beside(trace_path: Path) -> Path | None:
    """The expectations file beside a local trace, if there is one."""
    candidate = trace_path.parent / EXPECT_FILE
    return candidate if candidate.is_file() else None


def expectations_for(trace_path: Path, file: Path) -> list[str]:
    """The expectation strings `file` gives the trace at `trace_path` (top-level `expect` first, then
    every `[[trace]]` table whose `match` glob matches the file name)."""
    if file.is_dir():
        raise ExpectationError(f"{shown(file)}: is a folder, not an expectations file")
    try:
        text = read_regular(file, str(file), limit=MAX_BYTES).decode("utf-8")
    except TraceError as exc:       # a FIFO, a device, a folder, a missing file or one over MAX_BYTES
        raise ExpectationError(f"cannot read the expectations file: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ExpectationError(f"cannot read {shown(file)}: not UTF-8 text ({exc.reason})") from None
    try:
        data = _toml_loads(text)
    except ExpectationError as exc:
        raise ExpectationError(f"{file}: {exc}") from None
    found = _strings(data.get("expect", []), file, "expect")
    tables = data.get("trace", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ExpectationError(f"{file}: `trace` must be [[trace]] tables with `match` and `expect`")
    for table in tables:
        pattern = table.get("match")
        if not isinstance(pattern, str):
            raise ExpectationError(f"{file}: every [[trace]] needs a `match` glob (a string)")
        if fnmatch.fnmatchcase(trace_path.name, pattern):
            found += _strings(table.get("expect", []), file, f"expect of {pattern!r}")
    return found


def _strings(value: Any, file: Path, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ExpectationError(f"{file}: {where} must be a list of strings")
    return list(value)


def outcomes_beside(trace: Any) -> tuple[list[Any], str | None]:
    """The expectations of the file beside a local trace checked against it, mismatches first, and the
    file's problem in one line when it cannot be used ([] and None when there is no such file)."""
    from mlptui.trace.analysis.expectations.expectations import check, parse

    path = Path(str(trace.source))
    try:
        file = beside(path)
    except OSError:
        return [], None
    if file is None:
        return [], None
    try:
        texts = expectations_for(path, file)
        outcomes = check(trace, [parse(t) for t in texts])
    except ExpectationError as exc:
        return [], str(exc)
    return sorted(outcomes, key=lambda o: o.ok), None
