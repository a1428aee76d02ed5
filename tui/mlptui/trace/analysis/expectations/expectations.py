"""Guess first, then look: a small language of expectations about a trace, each checked against what the
trace shows (`mlptui check`, and the app's findings when an expectations file sits beside a trace).

One expectation per string; case and surrounding spaces do not matter:

    kernels per step OP N       kernel events launched by each profiled step (memcpy/memset not counted)
    launches per step OP N      kernel launch calls (runtime/driver launches, graph launches) per step
    memcpy per step OP N        Memcpy events launched by each step
    no memcpy                   the same as `memcpy per step == 0`
    attention kernel: WORD      the step's fused attention kernel is WORD's: flash, efficient, cudnn, ck,
                                aiter, flashinfer, trtllm, triton; `none` = no attention kernel
    tensor cores: all GEMMs     every GEMM and attention kernel of the step runs on Tensor Cores
    tensor cores: no GEMMs      none of them does
    mask rebuilt / no mask rebuilt   the causal mask is (not) built inside the profiled steps
    integrity = "ok"            the trace has no integrity problem (mlptui.trace.analysis.steps.integrity);
                                `integrity == ok` and `integrity: ok` read the same
    critical_path.SHARE OP X    the share (0-1) of each step's critical path that is device work
                                (`gpu_share`) or one kind of time (`cpu_share`, `launch_share`, ...)

OP is one of == != < <= > >= and N a whole number (X: a number). "Per step" holds when it holds in every profiled step
(the whole trace is one step when it has none); kernels and attention kernels are those of the last
profiled step for the `attention kernel` and `tensor cores` forms, as the findings.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from mlptui.base.errors import MlptuiError
from mlptui.trace.analysis.advice.findings import focus_step, step_gpu
from mlptui.trace.analysis.attention.attention import IMPLEMENTATION_WORDS, attention_facts, implementation
from mlptui.trace.analysis.critical_path.critical_graph import KINDS
from mlptui.trace.analysis.critical_path.critical_path import critical_paths
from mlptui.trace.analysis.kernels.tensor_cores import uses_tensor_cores
from mlptui.trace.analysis.steps.integrity import integrity
from mlptui.trace.model import KERNEL, LAUNCH_CATS, MEMCPY, Trace
from mlptui.trace.names.kernel import decode_kernel
from mlptui.trace.names.runtime_calls import classify_call
from mlptui.trace.reports.check import (
    AttentionShown,
    CountsShown,
    CriticalPathShown,
    IntegrityShown,
    MaskShown,
    Outcome,
    ProblemCount,
    TensorCoresShown,
)

OPS: dict[str, Callable[[float, float], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt,
}
COUNTS = ("kernels per step", "launches per step", "memcpy per step")
ATTENTION_WORDS = (*[w for w in IMPLEMENTATION_WORDS if w != "unknown"], "none")
FORMS = ("kernels per step OP N", "launches per step OP N", "memcpy per step OP N", "no memcpy",
         "attention kernel: " + "|".join(ATTENTION_WORDS), "tensor cores: all GEMMs", "tensor cores: no GEMMs",
         "mask rebuilt", "no mask rebuilt", 'integrity = "ok"',
         "critical_path.gpu_share OP X (or cpu_share, launch_share, ...)")
SHARES = ("gpu", *KINDS)

_COUNT = re.compile(r"^(kernels|launches|memcpy) per step\s*(==|!=|<=|>=|<|>)\s*(\d+)$")
_SHARE = re.compile(r"^critical_path\.(\w+)_share\s*(==|!=|<=|>=|<|>)\s*(\d+(?:\.\d*)?|\.\d+)$")
_INTEGRITY = re.compile(r"""^integrity\s*(?:==|=|:)\s*(["']?)ok\1$""")
MAX_DIGITS = 9           # N of a count: more digits is no count a trace could hold (and `int` refuses 4,300)
_SHOWN = 80              # characters of an expectation quoted in a message


class ExpectationError(MlptuiError):
    """A malformed expectation (exit code 2): the message names it and the forms that exist."""


@dataclass(frozen=True)
class Expectation:
    text: str          # as written
    kind: str          # count, attention, tensor-cores, mask, integrity
    subject: str = ""  # kernels / launches / memcpy; the attention word; all / no; rebuilt / not
    op: str = ""
    value: int = 0
    share: float = 0.0   # critical_path.*_share: the bound


def parse(text: str) -> Expectation:
    s = " ".join(str(text).strip().lower().split())
    m = _COUNT.match(s)
    if m:
        if len(m.group(3)) > MAX_DIGITS:
            raise ExpectationError(f"malformed expectation {_quoted(text)}: N is a whole number of at most "
                                   f"{MAX_DIGITS} digits")
        return Expectation(text, "count", m.group(1), m.group(2), int(m.group(3)))
    m = _SHARE.match(s)
    if m:
        if m.group(1) not in SHARES:
            raise ExpectationError(f"malformed expectation {text!r}: the critical path's shares are "
                                   f"{', '.join(k + '_share' for k in SHARES)}")
        return Expectation(text, "critical-path", m.group(1), m.group(2), share=float(m.group(3)))
    if s == "no memcpy":
        return Expectation(text, "count", "memcpy", "==", 0)
    if s.startswith("attention kernel:"):
        word = s.removeprefix("attention kernel:").strip()
        if word in ATTENTION_WORDS:
            return Expectation(text, "attention", word)
        raise ExpectationError(f"malformed expectation {_quoted(text)}: the attention kernel is one of "
                               f"{', '.join(ATTENTION_WORDS)}")
    if s in ("tensor cores: all gemms", "tensor cores: no gemms"):
        return Expectation(text, "tensor-cores", s.split(": ")[1].split()[0])
    if s in ("mask rebuilt", "no mask rebuilt"):
        return Expectation(text, "mask", "rebuilt" if s == "mask rebuilt" else "not")
    if _INTEGRITY.match(s):
        return Expectation(text, "integrity", "ok")
    raise ExpectationError(f"malformed expectation {_quoted(text)}: expected one of: {'; '.join(FORMS)}")


def _quoted(text: str) -> str:
    """`text` quoted for a one-line message, cut to _SHOWN characters."""
    text = str(text)
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "…")


def _per_step_counts(trace: Trace, subject: str) -> list[int]:
    steps = [s.index for s in trace.steps] or [-1]
    counts = dict.fromkeys(steps, 0)
    if subject == "launches":
        for op in trace.ops:
            if op.cat in LAUNCH_CATS and op.step in counts and classify_call(op.name) in ("launch", "graph"):
                counts[op.step] += 1
    else:
        cat = KERNEL if subject == "kernels" else MEMCPY
        for g in trace.gpu:
            if g.cat == cat and g.step in counts:
                counts[g.step] += 1
    return list(counts.values())     # without steps everything has step -1: the whole trace is one


def _step_kernels(trace: Trace) -> list[str]:
    return [trace.gpu[g].name for g in step_gpu(trace, focus_step(trace)) if trace.gpu[g].cat == KERNEL]


def evaluate(trace: Trace, e: Expectation) -> Outcome:
    """Whether `e` holds on the trace, with what the trace shows (mlptui.render.check_text says it)."""
    if e.kind == "count":
        counts = _per_step_counts(trace, e.subject)
        ok = all(OPS[e.op](c, e.value) for c in counts)
        return Outcome(expectation=e.text, ok=ok, shown=CountsShown(subject=e.subject, counts=counts))
    if e.kind == "critical-path":
        return _critical_path(trace, e)
    if e.kind == "attention":
        words: dict[str, str] = {}
        for raw in _step_kernels(trace):
            impl = implementation(raw)
            if impl is not None:
                words.setdefault(impl.word, impl.label)
        ok = e.subject in words and len(words) == 1 if words else e.subject == "none"
        return Outcome(expectation=e.text, ok=ok, shown=AttentionShown(kernels=words))
    if e.kind == "tensor-cores":
        matrix = [(raw, uses_tensor_cores(raw)) for raw in _step_kernels(trace)
                  if decode_kernel(raw).family in ("gemm", "attention")]
        off = [decode_kernel(raw).short for raw, tc in matrix if not tc]
        on = len(matrix) - len(off)
        ok = bool(matrix) and ((not off) if e.subject == "all" else on == 0)
        return Outcome(expectation=e.text, ok=ok,
                       shown=TensorCoresShown(kernels=len(matrix), on=on, without=list(dict.fromkeys(off))))
    if e.kind == "integrity":
        found = integrity(trace)
        problems = [ProblemCount(kind=p.kind, count=p.count) for p in found.problems]
        return Outcome(expectation=e.text, ok=found.ok, shown=IntegrityShown(problems=problems))
    facts = attention_facts(trace)
    rebuilt = facts is not None and bool(facts.mask_chain)
    shown = (MaskShown(rebuilt=True, mask_steps=facts.mask_steps, steps=facts.steps, chain=list(facts.mask_chain))
             if rebuilt and facts is not None else MaskShown(rebuilt=False, mask_steps=0, steps=0, chain=[]))
    return Outcome(expectation=e.text, ok=rebuilt == (e.subject == "rebuilt"), shown=shown)


def _critical_path(trace: Trace, e: Expectation) -> Outcome:
    shares = []
    for p in critical_paths(trace):
        part = p.gpu_share if e.subject == "gpu" else (p.breakdown_us[e.subject] / p.length_us if p.length_us > 0 else 0.0)
        shares.append(part)
    ok = all(OPS[e.op](round(x, 4), e.share) for x in shares)
    return Outcome(expectation=e.text, ok=ok, shown=CriticalPathShown(subject=e.subject, shares=shares))


def check(trace: Trace, expectations: list[Expectation]) -> list[Outcome]:
    return [evaluate(trace, e) for e in expectations]
