"""Fuzz target: any bytes through load -> summary -> text / Markdown / JSON -> the details pane -> every
profiler view (overview, operators, kernels, memory, modules) in every scope and grouping, the trace
screen's facts and launch lists, and the diff against itself and against a bundled sample
(tests/fuzz/views.py builds them as the app and the CLI do).

The only failure a user may see is a one-line `MlptuiError`; anything else raised by `check` is a
crash. Run it with atheris (libFuzzer, coverage-guided); the long run documented in docs/inputs.md is

    .venv/bin/python tests/fuzz/fuzz_trace.py -max_total_time=3600 -rss_limit_mb=1024 -timeout=5 \
        .fuzz-corpus tests/fuzz/seeds

libFuzzer stops at the first crash, a hang over 5 s (-timeout) or an input over 1 GB RSS
(-rss_limit_mb) and writes the input as crash-*/timeout-*/oom-*; at the end it prints
`Done N runs in S second(s)`. `tests/fuzz/seeds` is written on first use from the bundled samples and
../shared/corpus (tests/fuzz/seeds.py) plus the known hostile inputs (tests/fuzz/hostile.py).
tests/test_fuzz.py runs the same target for a bounded time in CI.

Besides libFuzzer's byte mutations, a structure-aware mutator (`mutate`) parses the input as JSON
and swaps values for hostile ones of other types (deep nesting, lone surrogates, integers beyond 64
bits, NaN, control characters, huge names, names that read as markup), and sometimes gzips the result.
Every name a pane shows must read as written: the details panes' markup is parsed by the pane's own parser (shown_text)
and must hold the op's or kernel's name, and views.py checks the texts the screens draw.
"""

from __future__ import annotations

import gc
import gzip
import json
import os
import random
import subprocess
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = os.path.join(HERE, "seeds")
MAX_DETAILS = 12      # op and GPU rows whose details pane text is built per input


REFERENCE = os.path.join(HERE, "..", "..", "sample_traces")
_reference: list = []     # the bundled sample every fuzzed trace is also diffed against, loaded once


def _imports() -> None:
    global MlptuiError, load_trace_bytes, summarize, format_report, op_details, gpu_details, build_facts
    global decode_kernel, classify_call, shown_text, open_every_view, open_the_diff, printable
    if HERE not in sys.path:            # imported as tests.fuzz.fuzz_trace: its sibling is not on the path
        sys.path.insert(0, HERE)
    from views import open_every_view, open_the_diff

    from mlptui.base.errors import MlptuiError
    from mlptui.base.text import printable
    from mlptui.commands.summary import format_report
    from mlptui.trace.analysis.report.summary import summarize
    from mlptui.trace.names.kernel import decode_kernel
    from mlptui.trace.names.runtime_calls import classify_call
    from mlptui.trace.parse.load import load_trace_bytes
    from mlptui.viewmodels.detail_text import gpu_details, op_details
    from mlptui.viewmodels.facts import build_facts
    from mlptui.widgets.details import shown_text


def check(data: bytes) -> None:
    """Raise only for a crash: a one-line MlptuiError is the expected answer to bad input."""
    try:
        trace = load_trace_bytes(data, source="fuzz")
    except MlptuiError as exc:
        if "\n" in str(exc):
            raise AssertionError(f"a multi-line error message: {exc!r}") from None
        return
    finally:
        gc.unfreeze()     # the loader freezes what it built (an app keeps one trace); a fuzzer makes many
    report = summarize(trace)
    for fmt in ("text", "md", "json"):
        out = format_report(report, fmt, top=15)
        out.encode("utf-8")                       # what the terminal gets: no lone surrogate
        if fmt != "json" and "\x1b" in out:
            raise AssertionError("a raw escape character in the text report")
    for i in _spread(len(trace.ops)):
        shown = shown_text(op_details(trace, i)).plain       # as the details pane shows it
        shown.encode("utf-8")
        if not shown.startswith(printable(trace.ops[i].name)):
            raise AssertionError(f"the op's name is not shown as written: {trace.ops[i].name!r}")
    for g in _spread(len(trace.gpu)):
        shown = shown_text(gpu_details(trace, g)).plain
        shown.encode("utf-8")
        if printable(trace.gpu[g].name) not in shown:
            raise AssertionError(f"the kernel's name is not shown as written: {trace.gpu[g].name!r}")
    build_facts(trace)
    open_every_view(trace)
    open_the_diff(trace, trace)
    open_the_diff(_reference_trace(), trace)
    decode_kernel.cache_clear()    # name caches: their entries (possibly huge names) would pile up over
    classify_call.cache_clear()    # millions of inputs and read as a leak in libFuzzer's RSS limit


def _reference_trace():
    """A small bundled sample (the eager MLP), the A side of a diff whose B side is the fuzzed trace."""
    if not _reference:
        names = sorted(n for n in os.listdir(REFERENCE) if n.startswith("mlp-eager-") and ".pt.trace.json" in n)
        with open(os.path.join(REFERENCE, names[-1]), "rb") as f:
            _reference.append(load_trace_bytes(f.read(), source="reference"))
        gc.unfreeze()
    return _reference[0]


def _spread(n: int) -> range:
    """Up to MAX_DETAILS indices spread over 0..n-1 (every one of a small trace)."""
    return range(0, n, max(1, -(-n // MAX_DETAILS)))


# ---------------------------------------------------------------- structure-aware mutation

_MARK = "\u0001mlptui-raw-{}\u0001"
_RAW = [
    "[" * 300 + "]" * 300,                     # deeper than orjson writes (255)
    "[" * 2000 + "]" * 2000,                   # deeper than the parsers go
    '{"a":' * 100 + "1" + "}" * 100,
    "123456789012345678901234567890",          # wider than 64 bits
    "-99999999999999999999", "1e309", "-1e309", "NaN", "Infinity", "-0.0", "1.5e-320",
    '"\\ud800"', '"x\\udfffy"', '"\\u0000"', '"\\u001b[31mred\\u001b[0m"', '"a\\nb\\rc"',
    '"\\u009b2J"', '"\\u202eevil"',
]
_VALUES = [
    None, True, False, 0, -1, 1, 2**31, 2**63 - 1, 2**64 - 1, -2**63, 0.5, -1e300, "", "x", "0", "-1",
    "1e3", "NaN", [], {}, [1, 2, 3], [[1, 2], [3]], {"a": 1}, ["x"], [None], "A" * 5000,
    "void at::native::" + "A" * 3000, "triton_" + "x_" * 2000, "nvjet_" + "1x2_" * 500,
    "ProfilerStep#1", "ProfilerStep#x", "kernel", "cpu_op", "cuda_runtime", "X", "i", "s", "f", "M",
    "cudaLaunchKernel", "cuLaunchKernelEx", "Memcpy HtoD", "Memset (Device)", "aten::addmm", "aten::mm",
    # markup-like names: every view must show them as written
    "[/]", "evil[/]op", "[b]x[/b]", "[@click=app.quit]q", "x\\", "\\[b]", "[", "]", "ProfilerStep#2 [/]",
    "aten::mm[link=http://x]y", "=HYPERLINK(\"x\")",
]
_KEYS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args", "correlation", "External id",
         "Input Dims", "Input type", "grid", "block", "registers per thread", "shared memory",
         "deviceProperties", "totalGlobalMem", "computeMajor", "computeMinor", "numSms", "baseTimeNanoseconds",
         "traceEvents", "bp", "device", "stream", "name", "warpSize", "sharedMemPerBlock"]


def _nodes(value, out, depth=0):
    out.append(value)
    if depth > 6 or len(out) > 4000:
        return
    if isinstance(value, dict):
        for v in value.values():
            _nodes(v, out, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _nodes(v, out, depth + 1)


def _hostile(rnd: random.Random, raws: list[str]):
    if rnd.random() < 0.35:
        raws.append(rnd.choice(_RAW))
        return _MARK.format(len(raws) - 1)
    return rnd.choice(_VALUES)


def _mutate_doc(doc, rnd: random.Random, raws: list[str]) -> None:
    containers = [n for n in _nodes_list(doc) if isinstance(n, (dict, list))]
    if not containers:
        return
    for _ in range(rnd.randint(1, 4)):
        target = rnd.choice(containers)
        if isinstance(target, dict):
            if target and rnd.random() < 0.7:
                key = rnd.choice(list(target))
            else:
                key = rnd.choice(_KEYS)
            if rnd.random() < 0.1:
                target.pop(key, None)
            else:
                target[key] = _hostile(rnd, raws)
        elif target and rnd.random() < 0.8:
            i = rnd.randrange(len(target))
            choice = rnd.random()
            if choice < 0.5:
                target[i] = _hostile(rnd, raws)
            elif choice < 0.7:
                target.append(json.loads(json.dumps(target[i])))       # duplicate an event
            else:
                del target[i]
        else:
            target.append(_hostile(rnd, raws))


def _nodes_list(doc):
    out: list = []
    _nodes(doc, out)
    return out


def mutate(data: bytes, max_size: int, seed: int) -> bytes:
    import atheris

    rnd = random.Random(seed)
    gz = data[:2] == b"\x1f\x8b"
    if gz:
        try:
            data = zlib.decompressobj(wbits=31).decompress(data, 1 << 22)
        except zlib.error:
            gz = False
    if rnd.random() < 0.5:
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            doc = None
        if isinstance(doc, (dict, list)):
            raws: list[str] = []
            _mutate_doc(doc, rnd, raws)
            try:
                text = json.dumps(doc, separators=(",", ":"))
            except (ValueError, RecursionError):
                text = None
            if text is not None:
                for i, raw in enumerate(raws):
                    text = text.replace(json.dumps(_MARK.format(i)), raw)
                data = text.encode("utf-8", "surrogatepass")
    else:
        data = atheris.Mutate(data, max(len(data), min(max_size, len(data) * 2 + 64)))
    if gz or rnd.random() < 0.03:
        data = gzip.compress(data, compresslevel=1)
    return data[:max(max_size, 1 << 16)] if not gz else data


def ensure_seeds() -> str:
    """The seed folder, written on first use (slices of real traces and the known hostile inputs) in a
    child process: reading the corpus peaks at a few GB, which libFuzzer's RSS limit must not count."""
    if not os.path.isdir(SEEDS) or not os.listdir(SEEDS):
        code = ("import sys, pathlib; sys.path.insert(0, sys.argv[1]); from hostile import write_hostile; "
                "from seeds import write_seeds; out = pathlib.Path(sys.argv[2]); write_seeds(out); "
                "write_hostile(out)")
        subprocess.run([sys.executable, "-c", code, HERE, SEEDS], check=True)
    return SEEDS


def main() -> None:
    import atheris

    with atheris.instrument_imports(include=["mlptui"]):
        _imports()
    ensure_seeds()
    for arg in sys.argv[1:]:
        if not arg.startswith("-"):
            os.makedirs(arg, exist_ok=True)      # libFuzzer wants its corpus folders to exist
    atheris.Setup(sys.argv, check, custom_mutator=mutate)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
else:
    _imports()
