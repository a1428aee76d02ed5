"""A picker row for a folder of traces: what it is (the ranks of one run, or a folder of traces) and its
label, read from the folder's own files only (names, manifest), never the traces' events.

    folder_row(folder) -> FolderRow
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlptui.contract.manifest import manifest_for
from mlptui.trace.parse.discover import find_traces
from mlptui.trace.parse.rank_hint import rank_files_or_why
from mlptui.viewmodels.facts import run_label


@dataclass(frozen=True)
class FolderRow:
    label: str      # `tp-mlp · eager · bf16 · 2 ranks` from the run's manifest, else the folder's name
    what: str       # what enter opens
    ranks: int      # 0 unless the folder's traces are the ranks of one run


def folder_row(folder: str) -> FolderRow:
    traces = find_traces(folder)
    name = Path(folder.rstrip("/")).name + "/"
    ranks, _ = rank_files_or_why(traces) if traces else (None, None)
    if ranks:
        label = f"{run_label(manifest_for(ranks[0][1]), folder)} · {len(ranks)} ranks"
        return FolderRow(label, f"run of {len(ranks)} ranks: enter opens them", len(ranks))
    return FolderRow(name, f"folder of {len(traces)} trace{'s' if len(traces) != 1 else ''}: enter lists them", 0)
