"""Whose timestamps can be compared: ranks recorded on one host share its clock, so the raw start of each
rank's collective kernel says who arrived last; ranks of different hosts (or of unknown ones) do not, and
their arrival is inferred from the kernels' durations instead (mlptui.trace.analysis.ranks.rank_calls).

Kineto writes no host name, and distinct process ids do not prove one host (containers on two machines
number their processes alike), so the host comes from what the recorder wrote beside the trace:

1. `host` in the trace's `mlptui` metadata block or in its run-manifest entry (`mlptui run --nproc`);
2. a run manifest whose `distributed.launcher` ran one node (`--nnodes=1`): every rank of that folder
   was recorded on the same, unnamed host.
"""

from __future__ import annotations

from pathlib import Path

from mlptui.contract.manifest import ManifestError, read_manifest
from mlptui.trace.model import Trace

ONE_NODE = "--nnodes=1"
ONE_NODE_RUN = "the one node of run"      # the token of ranks whose run manifest says one node, + the folder


def recording_host(trace: Trace) -> str | None:
    """Who recorded `trace`, as a token equal for every rank of one host; None when nothing says."""
    for block in (trace.meta.get("mlptui"), trace.manifest):
        if isinstance(block, dict):
            host = block.get("host")
            if isinstance(host, str) and host:
                return f"host {host}"
    folder = Path(trace.source).parent
    try:
        distributed = read_manifest(folder).extra.get("distributed")
    except (ManifestError, OSError):
        return None
    if isinstance(distributed, dict):
        launcher = distributed.get("launcher")
        if isinstance(launcher, str) and ONE_NODE in launcher.split():
            return f"{ONE_NODE_RUN} {folder.resolve()}"
    return None


def shared_clock(hosts: list[str | None]) -> tuple[bool, str]:
    """Whether ranks recorded on `hosts` share a clock, and why (one line)."""
    if len(hosts) < 2:
        return False, "one rank: nothing to compare"
    unknown = sum(h is None for h in hosts)
    if unknown:
        return False, (f"{unknown} of {len(hosts)} ranks name no host (no host in their metadata or manifest): "
                       "arrival inferred from kernel durations (a proxy)")
    distinct = sorted({h for h in hosts if h is not None})
    if len(distinct) == 1:
        where = ("one host (the run manifest's launcher ran one node)" if distinct[0].startswith(ONE_NODE_RUN)
                 else distinct[0])
        return True, f"every rank recorded on {where}: arrival read from kernel start times"
    return False, (f"ranks recorded on {len(distinct)} hosts, whose clocks differ: arrival inferred from kernel "
                   "durations (a proxy)")
