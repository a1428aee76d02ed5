"""No comment or docstring in the package cites a measured figure: a timing, a machine it was taken on, or
a size, ratio or share said to be measured. Such figures go stale as the code moves; they belong in the
dated files of benchmarks/results/, and the comment keeps the reason in words."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_ROOTS = (ROOT / "tui" / "mlptui", ROOT / "runners" / "mlptui")

NUMBER = r"(?<![\w.])\d[\d,]*(?:\.\d+)?"
# A duration: a number with a time unit.
TIMING = re.compile(NUMBER + r"(?:\s?(?:µs|us|ms)\b|\s(?:s|sec|seconds?|milliseconds?|microseconds?)\b)")
# Where or when a figure was taken.
MACHINE = re.compile(r"development (?:box|machine)|\b\d+-core (?:box|machine)|"
                     r"\bon (?:an? |one )?(?:H100|H200|A100|B200|MI300X?)\b|\bruns? \d+\b", re.IGNORECASE)
# A size, ratio or share said to be measured, within a few words of it (a bare one is a definition or a
# limit), or a speed-up ("6x faster").
AMOUNT = re.compile(NUMBER + r"\s?(?:[KMGT]i?B\b|×|x\b|%)")
MEASURED = re.compile(r"\bmeasured\b|\btook\b", re.IGNORECASE)
SPEEDUP = re.compile(NUMBER + r"\s?(?:x|×)\s(?:faster|slower)\b")
NEAR = 60

# Text that names a figure without having measured it, each (file, words in the text) with the reason.
ALLOWED = (
    # the formats every surface writes: examples of output, not measurements
    ("base/units.py", "µs"),
    ("viewmodels/fmt.py", "A duration given in µs: 2.69 µs"),
    ("render/diff_text.py", "`+1.20 ms`"),
    ("render/diff_text.py", "189.10 ms → 128.50 ms"),
    ("widgets/launches.py", "`cudaMemsetAsync 3.10 µs"),
    ("widgets/timeline.py", "`90.91 ms in view`"),
    # a constant's meaning: the gap between the readings it takes
    ("trace/parse/decode_parallel.py", "three readings 1 ms apart"),
    # the confidence of an interval, and Kineto's 0 % as a marker of no measurement: definitions
    (".py", "~95 % interval"),
    ("attention/attention.py", "Kineto's 0 % is a measurement gap"),
)


def _blocks(path: Path) -> list[tuple[int, str]]:
    """(first line, text) of each docstring and each run of whole-line comments (an end-of-line comment
    is a run of its own)."""
    source = path.read_text(encoding="utf-8")
    blocks: list[tuple[int, str]] = []
    run: list[str] = []
    start = last = 0
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        line = tok.start[0]
        whole = tok.line.strip().startswith("#")
        if run and whole and line == last + 1:
            run.append(tok.string[1:])
        else:
            if run:
                blocks.append((start, " ".join(run)))
            run, start = [tok.string[1:]], line
            if not whole:
                blocks.append((start, run[0]))
                run = []
        last = line
    if run:
        blocks.append((start, " ".join(run)))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                blocks.append((body[0].lineno, body[0].value.value))
    return blocks


def _allowed(path: Path, text: str) -> bool:
    rel = path.as_posix()
    return any(rel.endswith(name) and words in text for name, words in ALLOWED)


def _cited(text: str) -> re.Match[str] | None:
    """Where `text` cites a measured figure: a timing, a machine or run, a speed-up, or an amount said to
    be measured."""
    hit = TIMING.search(text) or MACHINE.search(text) or SPEEDUP.search(text)
    if hit:
        return hit
    for amount in AMOUNT.finditer(text):
        if MEASURED.search(text, max(0, amount.start() - NEAR), amount.end() + NEAR):
            return amount
    return None


def figures_cited(path: Path) -> list[str]:
    """Each comment or docstring of `path` that cites a measured figure, as `path:line: …words…`."""
    found = []
    for line, text in _blocks(path):
        flat = " ".join(text.split())
        hit = _cited(flat)
        if hit and not _allowed(path, flat):
            found.append(f"{path}:{line}: …{flat[max(0, hit.start() - 40):hit.end() + 20]}…")
    return found


def test_no_comment_or_docstring_cites_a_measured_figure() -> None:
    files = sorted(p for root in PACKAGE_ROOTS for p in root.rglob("*.py"))
    assert len(files) > 100
    cited = [f for path in files for f in figures_cited(path)]
    assert not cited, "measured figures belong in benchmarks/results/:\n" + "\n".join(cited)


@pytest.mark.parametrize("comment", [
    "    # 8 ms -> 0.7 ms for the bounds of the 100 MB trace",
    "    # about 5 ms on a 2-core box",
    '    """Hashing took 0.34-0.44 s of the first call."""',
    "    # the twin read 2-4 % faster than eager (run 11 of the notes)",
    "    # a 20000×20000 terminal took 2.1 GB in one app process",
    "    # measured on the development box",
    "    # 1.0 % over eager on an H100",
    "    # numpy's stable sort is a radix sort for 16-bit ints (6x faster)",
    "    # peak RSS measured at 1,231 MB",
])
def test_a_measured_figure_in_a_comment_is_found(tmp_path: Path, comment: str) -> None:
    module = tmp_path / "module.py"
    module.write_text(f"def f() -> None:\n{comment}\n    return None\n", encoding="utf-8")
    assert len(figures_cited(module)) == 1


@pytest.mark.parametrize("comment", [
    "    # blocks of 1 MiB keep the scratch mask in cache",
    "    # int32, so 12M cells is 48 MB",
    "    # the interpreter's switch interval while such workers run",
    "    # a gzip file may inflate to at most 100x its size",
    "    # a cell measured faster only when the interval says so",
    "    # the fused path must be predicted 3 % faster",
])
def test_a_definition_or_limit_is_not_a_measurement(tmp_path: Path, comment: str) -> None:
    module = tmp_path / "module.py"
    module.write_text(f"def f() -> None:\n{comment}\n    return None\n", encoding="utf-8")
    assert figures_cited(module) == []
