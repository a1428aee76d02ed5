"""Text of the `ranks` section (`mlptui summary RUN_DIR`): step time per rank per step with each step's
straggler (the rank that arrived last at its collectives) and the wait it caused, compute /
communication / overlap / wait per rank, the collectives with their bus bandwidth over the transfer
(from the last rank's arrival) beside the link's peak and the wait, and each rank's critical path of its
aligned step with the time spent waiting on the other ranks."""

from __future__ import annotations

from mlptui.base.units import MISSING, bandwidth, duration, share, size
from mlptui.trace.analysis.comms.links import Link
from mlptui.trace.reports.ranks import RanksCriticalPath, RanksReport, Straggler


def _table(headers: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return [fmt(headers), fmt(["-" * w for w in widths]), *(fmt(r) for r in rows)]


def step_matrix(report: RanksReport) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of step time per rank (columns) per step (rows)."""
    ranks = report.ranks
    names: list[str] = []
    for r in ranks:
        for s in r.steps:
            if s.name not in names:
                names.append(s.name)
    slow = {s.step: s for s in report.stragglers}
    rows = []
    for name in names:
        cells = [name]
        for r in ranks:
            us = next((s.step_us for s in r.steps if s.name == name), None)
            cells.append(duration(us))
        cells.append(straggler_cell(slow.get(name)))
        rows.append(cells)
    return ["step", *(f"rank {r.rank}" for r in ranks), straggler_header(report)], rows


def straggler_header(report: RanksReport) -> str:
    """The straggler column's title: measured from start times, or the duration proxy, labelled so."""
    return "straggler (arrived last)" if report.clock.shared else "straggler (proxy: shortest kernel)"


def clock_line(report: RanksReport) -> str:
    """How arrival was read, in one line."""
    matched = "NCCL Seq" if report.clock.matched_by == "seq" else "their order"
    return f"arrival: {report.clock.why}; calls matched across ranks by {matched}"


def straggler_cell(st: Straggler | None) -> str:
    if st is None:
        return "n/a (no collective on 2+ ranks)"
    if st.rank is None:
        return "none (all arrived together)"
    return f"rank {st.rank}, others waited {duration(st.late_us)} ({st.last_at}/{st.calls} calls)"


def step_spread(report: RanksReport) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of step time per step across ranks (fastest, median, slowest and which rank), for
    runs with too many ranks to give each a column."""
    rows = []
    slow = {s.step: s for s in report.stragglers}
    by_step: dict[str, list[tuple[float, int]]] = {}
    for r in report.ranks:
        for s in r.steps:
            if s.step_us is not None:
                by_step.setdefault(s.name, []).append((s.step_us, r.rank))
    for name, times in by_step.items():
        times.sort()
        rows.append([name, str(len(times)), duration(times[0][0]), duration(times[len(times) // 2][0]),
                     f"{duration(times[-1][0])} (rank {times[-1][1]})", straggler_cell(slow.get(name))])
    return ["step", "ranks", "fastest", "median", "slowest", straggler_header(report)], rows


# A step-by-rank matrix wider than this is shown as each step's spread across ranks instead.
MAX_WIDTH = 120


def rank_rows(report: RanksReport) -> list[list[str]]:
    return [[str(r.rank), duration(r.compute_us), duration(r.comm_us), share(r.overlap_share),
             duration(r.comm_wait_us), duration(r.late_us),
             MISSING if r.arrived_last is None else str(r.arrived_last)]
            for r in report.ranks]


RANK_HEADERS = ["rank", "compute", "comm", "overlap", "comm wait", "late by", "last at"]


def collective_rows(report: RanksReport, link: Link | None) -> list[list[str]]:
    rows = []
    for c in report.collectives:
        pct = "" if link is None or c.busbw_gbps is None else share(c.busbw_gbps / link.peak_gbps)
        rows.append([str(c.rank), c.collective, c.dtype or MISSING, size(c.bytes),
                     str(c.group_size or MISSING), str(c.count), duration(c.total_us),
                     duration(c.wait_us), duration(c.transfer_us), bandwidth(c.algbw_gbps),
                     bandwidth(c.busbw_gbps), pct])
    return rows


def collective_headers(link: Link | None) -> list[str]:
    return ["rank", "collective", "dtype", "size", "group", "count", "total", "wait", "transfer", "algbw",
            "busbw", "% peak"]


CALL_ROWS = 10


def render_ranks_text(report: RanksReport, link: Link | None) -> str:
    lines = [f"run of {len(report.ranks)} rank(s), world size {report.world_size}, "
             f"backend {report.backend or MISSING}", ""]
    headers, rows = step_matrix(report)
    matrix = _table(headers, rows, set(range(1, len(headers) - 1)))
    if max(map(len, matrix)) > MAX_WIDTH:
        headers, rows = step_spread(report)
        matrix = _table(headers, rows, {1, 2, 3, 4})
        matrix.append("step time across ranks: the fastest, the median and the slowest rank of each step")
    lines += matrix
    lines += ["step times are profiled; straggler: the rank that arrived last at the step's collectives, and how",
              "long the others waited for it", clock_line(report)]
    lines += ["", *_table(RANK_HEADERS, rank_rows(report), {1, 2, 3, 4, 5, 6})]
    lines += ["overlap: share of communication time during which compute kernels run; comm wait: time in",
              "collectives spent waiting for the last rank; late by: summed over calls, how long after the first",
              "rank this one arrived; last at: collectives at which this rank arrived last"]
    late = sorted((c for c in report.calls if c.last_rank is not None), key=lambda c: -(c.late_us or 0.0))
    if late:
        rows = [[c.step or MISSING, c.collective, size(c.bytes), str(c.index + 1),
                 f"rank {c.last_rank}", duration(c.late_us), duration(c.transfer_us)] for c in late[:CALL_ROWS]]
        lines += ["", *_table(["step", "collective", "size", "call", "arrived last", "late by", "transfer"], rows,
                              {2, 3, 5, 6})]
        more = f" ({len(late) - CALL_ROWS} more in --json)" if len(late) > CALL_ROWS else ""
        lines += [f"collective calls, latest arrivals first{more}: late by = how long after the first rank",
                  "the last one arrived (the longest wait it caused); call = the n-th of that kind"]
    if report.collectives:
        lines += ["", *_table(collective_headers(link), collective_rows(report, link), set(range(3, 12)))]
        lines += ["transfer: kernel time from the last rank's arrival (total − wait); bandwidths are over the",
                  "transfer, busbw with nccl-tests' factor for the collective"]
        if link is not None:
            lines.append(f"% peak: bus bandwidth over {link.name}'s {bandwidth(link.peak_gbps)} per GPU one way "
                         "(mlptui.trace.analysis.comms.links)")
    if report.critical_path is not None and report.critical_path.ranks:
        lines += ["", *critical_path_lines(report.critical_path)]
    return "\n".join(lines) + "\n"


def critical_path_table(cp: RanksCriticalPath) -> tuple[list[str], list[list[str]]]:
    """Headers and rows: per rank, its step, path length, time by kind (the kinds on any rank's path, in the
    path's order) and the part spent waiting on the other ranks."""
    kinds = [k for k in cp.ranks[0].breakdown_us if any(r.breakdown_us.get(k, 0.0) > 0 for r in cp.ranks)]
    rows = []
    for r in cp.ranks:
        wait = MISSING if r.rank_wait_us is None else duration(r.rank_wait_us)
        if r.rank_wait_us is not None and r.length_us > 0:
            wait += f" ({share(r.rank_wait_us / r.length_us)})"
        rows.append([str(r.rank), r.step, duration(r.length_us),
                     *(duration(r.breakdown_us.get(k, 0.0)) for k in kinds), wait])
    return ["rank", "step", "path", *(k.replace("_", " ") for k in kinds), "waiting on ranks"], rows


def critical_path_lines(cp: RanksCriticalPath) -> list[str]:
    headers, rows = critical_path_table(cp)
    lines = _table(headers, rows, set(range(2, len(headers))))
    lines += ["critical path of each rank's aligned step (its middle step): the chain of work the step waits on,",
              "as long as the step window; by kind, and the part of it waiting on the other ranks"]
    if cp.counting == "last arrival":
        lines += ["waiting on ranks: on-path collective kernel time before the last rank's matching kernel",
                  "started, counted as sync wait (the rest of the kernel counts as kernel)"]
    else:
        lines += ["waiting on ranks: not measured, kernel starts cannot be compared across these ranks; on-path",
                  "collective kernels count as kernel time with their measured duration, as on one rank"]
    if len({r.step for r in cp.ranks}) > 1:
        lines.append("the ranks' middle steps differ: each path is of the rank's own middle step")
    return lines
