"""Ranks and collectives of real multi-rank traces: PARAM's DLRM ranks 0 and 1, HTA's rank 1 of 128,
the MI300X DDP rank and HTA's 2-rank NCCL trace. What mlptui decodes is checked against a plain
`json` + `gzip` reading of the same files, and the overlap against an interval sweep written here."""

from __future__ import annotations

import collections
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from mlptui.trace.analysis.comms.collectives import collectives
from mlptui.trace.analysis.ranks.ranks import comm_compute, rank_info, rank_run, ranks_report
from mlptui.trace.parse.load import load_trace
from mlptui.trace.parse.rank_hint import rank_files, rank_hint

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpus"
REAL = SHARED / "real"
PARAM = [REAL / "facebookresearch__param__dlrm_kineto_worker0_step_12.1694128201545.pt.trace.json.gz",
         REAL / "facebookresearch__param__dlrm_kineto_worker1_step_12.1694128201556.pt.trace.json.gz"]
HTA_RANK1 = REAL / "facebookresearch__HolisticTraceAnalysis__trace_filter_sampled_rank-1.json.gz"
MI300X = REAL / "AMD-AGI__TraceLens__mi300_resnet_act_checkpoint.json.gz"
HTA_NCCL = SHARED / "hta" / "nccl_parser_config__nccl_data.json.gz"
ELEMENT = {"float": 4, "Float": 4, "BFloat16": 2, "c10::BFloat16": 2, "long int": 8, "int": 4,
           "unsigned char": 1, "signed char": 1, "Long": 8, "long": 8, "Int": 4}
SPELLING = {"all_reduce": "allreduce", "all_to_all": "alltoall", "_all_gather_base": "allgather",
            "broadcast": "broadcast"}


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"corpus file not found: {path}")
    return path


def raw(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rb") as f:
        return json.load(f)


def nccl_kernels(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted((e for e in doc["traceEvents"] if e.get("cat") in ("kernel", "Kernel")
                   and "nccl" in e.get("name", "").lower()), key=lambda e: e["ts"])


def test_param_dlrm_ranks_0_and_1_are_one_run() -> None:
    traces = [load_trace(need(p)) for p in PARAM]
    assert [(rank_info(t).rank, rank_info(t).world_size, rank_info(t).backend) for t in traces] == \
        [(0, 8, "nccl"), (1, 8, "nccl")]
    assert [h.rank for h in map(rank_hint, PARAM)] == [0, 1]  # from the header, before loading
    assert [r for r, _ in rank_files(list(reversed(PARAM)))] == [0, 1]
    ranked = rank_run(list(reversed(traces)))
    assert ranked is not None and [r for r, _ in ranked] == [0, 1]
    report = ranks_report(ranked)
    assert report.world_size == 8 and report.backend == "nccl"
    assert [r.rank for r in report.ranks] == [0, 1]
    steps = {r.rank: r.steps for r in report.ranks}
    assert [s.name for s in steps[0]] == [s.name for s in steps[1]] == ["ProfilerStep#10"]
    # The straggler is the rank that arrives last at the collectives, not the one with the longer step.
    # These two ranks ran on different hosts, so their clocks are not compared: a call's kernels end
    # together, so the shorter kernel started later, by the difference (the n-th kernel of one size on
    # each rank is one call).
    per_rank = []
    for p in PARAM:
        seen: collections.Counter[Any] = collections.Counter()
        calls = {}
        for k in nccl_kernels(raw(p)):
            calls[(k["name"], seen[k["name"]])] = k["dur"]
            seen[k["name"]] += 1
        per_rank.append(calls)
    caused = {0: 0.0, 1: 0.0}
    for key in per_rank[0].keys() & per_rank[1].keys():
        d0, d1 = per_rank[0][key], per_rank[1][key]
        if d0 != d1:
            caused[0 if d0 < d1 else 1] += abs(d0 - d1)
    (st,) = report.stragglers
    assert st.rank == max(caused, key=lambda r: caused[r])
    assert st.late_us == pytest.approx(caused[st.rank], abs=1e-3)
    assert st.rank != max((0, 1), key=lambda r: steps[r][0].step_us)   # step time names the other one


@pytest.mark.parametrize("path", PARAM + [HTA_RANK1], ids=["param0", "param1", "hta_rank1"])
def test_sizes_from_the_nccl_annotations_match_a_plain_reading(path: Path) -> None:
    """These traces have NCCL kernels without args: sizes come from the `nccl:<collective>` annotation
    (Input Dims × Input type) that launched each kernel."""
    doc = raw(need(path))
    ann = {e["args"]["External id"]: e for e in doc["traceEvents"]
           if e.get("name", "").startswith("nccl:") and e.get("cat") == "user_annotation"}
    expected = collections.Counter()
    for e in ann.values():
        dims, types = e["args"]["Input Dims"], e["args"]["Input type"]
        n = 1
        for d in dims[0]:
            n *= d
        expected[(SPELLING[e["name"][5:]], n * ELEMENT[types[0]])] += 1
    decoded = collections.Counter((c.collective, c.bytes) for c in collectives(load_trace(path)))
    assert sum(decoded.values()) == len(nccl_kernels(doc))
    assert decoded == expected


def test_hta_rank_1_of_128() -> None:
    trace = load_trace(need(HTA_RANK1))
    info = rank_info(trace)
    assert (info.rank, info.world_size) == (1, 128)
    ranked = rank_run([trace])  # one rank of a larger job is still a run
    assert ranked is not None
    report = ranks_report(ranked)
    assert report.world_size == 128 and report.ranks[0].comm_wait_us is None  # no other rank to wait on
    kinds = {(c.collective, c.group_size) for c in report.collectives}
    assert ("allreduce", 128) in kinds and ("alltoall", 128) in kinds
    ar = next(c for c in report.collectives if c.collective == "allreduce" and c.bytes == 19618307 * 4)
    # bus bandwidth = bytes / time × 2(n−1)/n for an all-reduce over 128 ranks
    assert ar.busbw_gbps == pytest.approx(ar.bytes * ar.count / ar.total_us / 1e3 * 2 * 127 / 128,
                                             rel=1e-3)


def test_hta_two_rank_nccl_kernel_args_decode_as_written() -> None:
    doc = raw(need(HTA_NCCL))
    kernels = nccl_kernels(doc)
    decoded = collectives(load_trace(HTA_NCCL))
    assert len(decoded) == len(kernels) == 21
    for k, c in zip(kernels, decoded, strict=True):
        a = k["args"]
        assert c.collective == a["Collective name"]
        assert (c.in_nelems, c.out_nelems, c.group_size) == (a["In msg nelems"], a["Out msg nelems"], a["Group size"])
        assert c.bytes == max(a["In msg nelems"], a["Out msg nelems"]) * ELEMENT[a["dtype"]]
        assert c.group == f"{a['Process Group Name']} {a['Process Group Ranks']}"
        assert c.dur == pytest.approx(k["dur"], abs=1e-3)


def test_mi300x_rank_is_found_and_its_rccl_kernels_decoded_as_written() -> None:
    trace = load_trace(need(MI300X))
    info = rank_info(trace)
    assert (info.rank, info.world_size, info.backend) == (0, 8, "nccl")
    kernels = nccl_kernels(raw(MI300X))
    found = collectives(trace)
    assert len(found) == len(kernels) == 17
    for k, c in zip(kernels, found, strict=True):
        a = k.get("args", {})
        if "Collective name" not in a:
            # ncclDevKernel_Generic without args names neither collective nor size: counted as
            # communication, its size left unknown rather than guessed
            assert (c.collective, c.bytes) == ("collective", None)
            continue
        assert (c.collective, c.group_size) == (a["Collective name"], a["Group size"]) and c.group_size == 8
        assert c.bytes == max(a["In msg nelems"], a["Out msg nelems"]) * ELEMENT[a["dtype"]]
    assert sum(c.bytes is not None for c in found) == 12


def sweep_overlap(doc: dict[str, Any]) -> tuple[float, float]:
    """(communication time, communication time with a compute kernel running), by a sweep over kernel
    start/end points: a different computation from mlptui's interval unions."""
    points = []
    for e in doc["traceEvents"]:
        if e.get("cat") not in ("kernel", "Kernel") or e.get("ph") != "X":
            continue
        comm = "nccl" in e["name"].lower() or "rccl" in e["name"].lower()
        points += [(float(e["ts"]), 1, comm), (float(e["ts"]) + float(e["dur"]), -1, comm)]
    points.sort(key=lambda p: (p[0], p[1]))
    active = {True: 0, False: 0}
    comm_t = both_t = 0.0
    last = None
    for t, delta, comm in points:
        if last is not None and active[True] > 0:
            comm_t += t - last
            if active[False] > 0:
                both_t += t - last
        active[comm] += delta
        last = t
    return comm_t, both_t


@pytest.mark.parametrize("path", PARAM + [HTA_RANK1, MI300X, HTA_NCCL],
                         ids=["param0", "param1", "hta_rank1", "mi300x", "hta_nccl"])
def test_overlap_matches_an_interval_sweep(path: Path) -> None:
    comm_t, both_t = sweep_overlap(raw(need(path)))
    cc = comm_compute(load_trace(path))
    assert comm_t > 0
    # the raw file's epoch-µs floats carry about 0.05 µs of rounding at this magnitude
    assert cc.comm_us == pytest.approx(comm_t, rel=1e-6, abs=0.1)
    assert cc.overlap_us == pytest.approx(both_t, rel=1e-6, abs=0.1)
    assert cc.overlap_share == pytest.approx(both_t / comm_t, rel=1e-6, abs=1e-6)
