"""The drill-down texts of the profiler views: an operator's call sites and launched work, a module's
ops and kernels, the memory peaks. Each costs a bounded amount whatever the trace's size, so moving a
cursor stays a repaint: call sites are read from at most SITE_SAMPLE calls spread over the group, and
the rest was counted when the rows were built."""

from __future__ import annotations

from rich.text import Text

from mlptui.base.text import printable
from mlptui.trace.analysis.memory.memory import MemoryReport
from mlptui.trace.analysis.operators.modules import ModuleRow
from mlptui.trace.analysis.operators.operators import OpGroup, call_sites, top_entries
from mlptui.trace.model import Trace
from mlptui.trace.names.kernel import decode_kernel
from mlptui.viewmodels import fmt

SITE_SAMPLE = 1000
TOP = 4


def spread(ids: list[int], limit: int) -> list[int]:
    """At most `limit` of `ids`, evenly spaced (all of them when there are no more)."""
    if len(ids) <= limit:
        return ids
    return [ids[i * len(ids) // limit] for i in range(limit)]


def operator_detail(trace: Trace, row: OpGroup) -> Text:
    text = Text()
    text.append(printable(row.name), "bold")
    sample = spread(row.ops, SITE_SAMPLE)
    of = "" if len(sample) == len(row.ops) else f" (in {fmt.count(len(sample))} calls spread over all)"
    text.append(f"  {fmt.count(row.calls)} calls · called from{of}:\n")
    for site, n in call_sites(trace, sample, top=TOP):
        text.append(f"  {n:>5}× {printable(site)}\n")
    launched = top_entries(row.launched, TOP)
    if launched:
        text.append("  launched:\n")
    for name, n, us in launched:
        text.append(f"  {n:>5}× {printable(decode_kernel(name).short)}  {fmt.us(us)}\n")
    return text


def module_detail(row: ModuleRow) -> Text:
    text = Text()
    text.append(printable(" / ".join(row.path)), "bold")
    text.append(f"  {fmt.count(row.calls)} calls · its ops (most GPU time first):\n")
    for name, n, us in top_entries(row.ops, TOP):
        text.append(f"  {n:>5}× {printable(name)}  {fmt.us(us)} on the GPU\n")
    kernels = top_entries(row.kernels, TOP)
    if kernels:
        text.append(f"  its kernels ({len(row.kernels)} distinct, most device time first):\n")
    for name, n, us in kernels:
        text.append(f"  {n:>5}× {printable(decode_kernel(name).short)}  {fmt.us(us)}\n")
    return text


def memory_peaks(report: MemoryReport) -> Text:
    """One line per device with memory events (its peak, when, in which op), then the events and what
    was never freed."""
    text = Text()
    for d in report.devices:
        reserved = "" if d.peak_reserved is None else f", reserved peak {fmt.size_bytes(d.peak_reserved)}"
        when = fmt.us(d.peak_ts)
        text.append(printable(f"{d.label}: peak {fmt.size_bytes(d.peak_allocated)} at {when} in {d.peak_op}{reserved}")
                    + "\n")
    unfreed = sum(n for _, n in report.unfreed)
    text.append(printable(f"{report.events} events; never freed in the trace: {fmt.size_bytes(unfreed)}"
                          + (f" (most from {report.unfreed[0][0]})" if report.unfreed else "")))
    if report.ops and not report.ops[0].net_known:
        text.append("\nnet per op n/a: the frees carry no Addr (torch before 1.10), so none can be matched "
                    "to the op that allocated the block", "dim")
    return text
