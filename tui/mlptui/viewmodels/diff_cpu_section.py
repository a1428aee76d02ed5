"""The CPU half of the diff screen, as lines under the kernel rows: per-step CPU time, kernel
launches (and the runtime/driver calls whose counts differ), CPU op count, then the ops found in
one step only (- A only, + B only) and the ops whose counts changed (~).

Built once per TraceDiff from what the diff already holds (no pass over the traces), so the
screen never recounts on a key press.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlptui.render.diff_text import MARKERS, fmt_delta
from mlptui.trace.diff.trace_diff import Side, TraceDiff
from mlptui.viewmodels.fmt import count, us


@dataclass(frozen=True, slots=True)
class CpuLine:
    """One line of the CPU section; `status` is said on the status line when the cursor is on it."""

    kind: str            # title, total, removed, added, changed, none
    a: str = ""
    a_value: str = ""
    b: str = ""
    b_value: str = ""
    delta: float | None = None
    delta_text: str = ""
    status: str = ""

    @property
    def marker(self) -> str:
        return MARKERS.get(self.kind, " ")


def cpu_section(d: TraceDiff) -> list[CpuLine]:
    a, b = d.a, d.b
    steps = a.step if a.step == b.step else f"A {a.step} ⇄ B {b.step}"
    lines = [CpuLine("title", a=f"CPU side · - only in A  + only in B  ~ count changed · {steps}",
                     status=_title_status(d, steps))]
    cpu_a, cpu_b = _aligned(a, "cpu_us"), _aligned(b, "cpu_us")
    lines.append(CpuLine("total", "CPU time / step", us(cpu_a), "", us(cpu_b), cpu_b - cpu_a,
                         fmt_delta(cpu_b - cpu_a),
                         f"CPU wall time of the aligned steps {us(cpu_a)} ⇄ {us(cpu_b)} "
                         f"(medians over the active steps {us(a.cpu_us)} ⇄ {us(b.cpu_us)})"))
    la, lb = int(_aligned(a, "launches")), int(_aligned(b, "launches"))
    lines.append(_count_total("launches / step", la, lb,
                              "launch calls (kernel and graph launches) in the aligned steps"))
    for p in d.launch_calls:
        if p.a_count != p.b_count:
            lines.append(_one_sided(p.name, p.a_count, p.b_count, "runtime/driver call", "  "))
    ca, cb = d.cpu.a_counts, d.cpu.b_counts
    lines.append(_count_total("CPU ops / step", sum(ca.values()), sum(cb.values()),
                              "CPU ops and annotations in the aligned steps (ProfilerStep left out)"))
    for name in d.cpu.removed_ops:
        lines.append(_one_sided(name, ca.get(name, 0), 0, "CPU op", kind="removed"))
    for name in d.cpu.added_ops:
        lines.append(_one_sided(name, 0, cb.get(name, 0), "CPU op", kind="added"))
    for name, n_a, n_b in d.cpu.count_changes:
        lines.append(_one_sided(name, n_a, n_b, "CPU op", kind="changed"))
    if not (d.cpu.removed_ops or d.cpu.added_ops or d.cpu.count_changes):
        lines.append(CpuLine("none", "  same CPU ops, same counts", status="both steps ran the same CPU ops "
                             "the same number of times"))
    return lines


def _title_status(d: TraceDiff, steps: str) -> str:
    """The section's ops found on one side only, named first: under a short screen the lines below the
    removed ones (the added) are out of sight, and a narrow one cuts their names."""
    said = [_first_names("+", d.cpu.added_ops, "B"), _first_names("-", d.cpu.removed_ops, "A")]
    names = "; ".join(s for s in said if s)
    if names:
        return f"CPU side: {names} · the aligned steps {steps}; c goes back to the kernel rows"
    return f"CPU side of the aligned steps ({steps}); c goes back to the kernel rows"


def _first_names(marker: str, names: list[str], side: str, shown: int = 3) -> str:
    if not names:
        return ""
    more = f", … ({len(names)} only in {side})" if len(names) > shown else ""
    return ", ".join(f"{marker} {n}" for n in names[:shown]) + more


def _aligned(side: Side, key: str) -> float:
    """The aligned step's own number (the ops listed are that step's); the median when it has none."""
    return float(getattr(side.aligned if side.aligned is not None else side, key))


def _count_total(label: str, a: int, b: int, what: str) -> CpuLine:
    return CpuLine("total", label, count(a), "", count(b), float(b - a), _signed(b - a),
                   f"{what}: {count(a)} ⇄ {count(b)}")


def _one_sided(name: str, a: int, b: int, what: str, indent: str = "", kind: str = "") -> CpuLine:
    """A name on A only (removed), on B only (added) or on both with other counts (changed);
    `kind` when the caller knows it (a count of 0 then means "not counted", shown blank)."""
    kind = kind or ("removed" if a and not b else "added" if b and not a else "changed")
    a_text, b_text = (f"{count(n)}×" if n else "" for n in (a, b))
    if kind == "removed":
        return CpuLine(kind, indent + name, a_text, status=f"{what} only in A: {name}, {a}× per step")
    if kind == "added":
        return CpuLine(kind, b=indent + name, b_value=b_text, status=f"{what} only in B: {name}, {b}× per step")
    return CpuLine(kind, indent + name, a_text, indent + name, b_text, float(b - a), _signed(b - a),
                   f"{what} count changed: {name}, {a}× in A ⇄ {b}× in B per step")


def _signed(n: int) -> str:
    return "±0" if n == 0 else f"+{n:,}" if n > 0 else f"−{-n:,}"
