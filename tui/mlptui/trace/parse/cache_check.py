"""The checks an index-cache entry passes before any of it is used: it is read from disk, where anything
may have changed it, and a column with a wrong dtype, length or an index out of range would otherwise
give wrong figures, or crash numpy (np.bincount of a negative or huge id) on every later open.

    check_entry(columns, args_facts)      raises ValueError naming the first column that is wrong

Each column is checked by its name's table (op_, gpu_, step_, thread_, stream_, mem_, mark_) and its role: a
dtype, one row per item of its table, and every id inside the table it points into. A column this module
does not know is refused too, so that a new column is checked from its first day.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_I, _F, _B, _U8 = np.dtype(np.int64), np.dtype(np.float64), np.dtype(np.bool_), np.dtype(np.uint8)

# column -> (dtype, the table whose length it has, what its values index: (table, smallest allowed))
# Tables: "op", "gpu", "step", "thread", "stream", "mem", "mark", "string", "event"; None: a free value.
_ID = tuple[str, int] | None
_SCHEMA: dict[str, tuple[np.dtype[Any], str | None, _ID]] = {
    "op_name": (_I, "op", ("string", 0)), "op_cat": (_I, "op", ("string", 0)),
    "op_pid": (_I, "op", None), "op_tid": (_I, "op", None), "op_event": (_I, "op", ("event", 0)),
    "op_parent": (_I, "op", ("op", -1)), "op_depth": (_I, "op", ("depth", 0)), "op_step": (_I, "op", ("step", -1)),
    "op_ts": (_F, "op", None), "op_dur": (_F, "op", None), "op_self_us": (_F, "op", None),
    "op_gpu_us": (_F, "op", None),
    "op_external_id": (_I, "op", None), "op_external_id_present": (_B, "op", None),
    "op_correlation": (_I, "op", None), "op_correlation_present": (_B, "op", None),
    "op_gpu_ptr": (_I, "op+1", None), "op_gpu_ids": (_I, None, ("gpu", 0)),
    "gpu_name": (_I, "gpu", ("string", 0)), "gpu_cat": (_I, "gpu", ("string", 0)),
    "gpu_device": (_I, "gpu", None), "gpu_stream": (_I, "gpu", None), "gpu_event": (_I, "gpu", ("event", 0)),
    "gpu_launch": (_I, "gpu", ("op", -1)), "gpu_op": (_I, "gpu", ("op", -1)), "gpu_step": (_I, "gpu", ("step", -1)),
    "gpu_ts": (_F, "gpu", None), "gpu_dur": (_F, "gpu", None),
    "gpu_external_id": (_I, "gpu", None), "gpu_external_id_present": (_B, "gpu", None),
    "gpu_correlation": (_I, "gpu", None), "gpu_correlation_present": (_B, "gpu", None),
    "gpu_grid_blocks": (_F, "gpu", None), "gpu_threads": (_I, "gpu", None), "gpu_registers": (_I, "gpu", None),
    "gpu_shared_memory": (_I, "gpu", None), "gpu_blocks_per_sm": (_F, "gpu", None),
    "gpu_occupancy_pct": (_F, "gpu", None),
    "step_name": (_I, "step", ("string", 0)), "step_ts": (_F, "step", None), "step_dur": (_F, "step", None),
    "step_op": (_I, "step", ("op", -1)),
    "thread_pid": (_I, "thread", None), "thread_tid": (_I, "thread", None),
    "thread_name": (_I, "thread", ("string", 0)),
    "thread_roots_ptr": (_I, "thread+1", None), "thread_roots_ids": (_I, None, ("op", 0)),
    "stream_device": (_I, "stream", None), "stream_stream": (_I, "stream", None),
    "stream_name": (_I, "stream", ("string", 0)),
    "mem_ts": (_F, "mem", None), "mem_pid": (_I, "mem", None), "mem_tid": (_I, "mem", None),
    "mem_event": (_I, "mem", ("event", 0)),
    "mark_kind": (_I, "mark", ("string", 0)), "mark_name": (_I, "mark", ("string", 0)),
    "mark_device": (_I, "mark", None), "mark_stream": (_I, "mark", None), "mark_ts": (_F, "mark", None),
    "mark_dur": (_F, "mark", None), "mark_event": (_I, "mark", ("event", 0)),
    "strings": (_U8, None, None), "string_ends": (_I, "string", None), "small": (_U8, None, None),
}
_LENGTH_OF = {"op": "op_ts", "gpu": "gpu_ts", "step": "step_ts", "thread": "thread_pid", "stream": "stream_device",
              "mem": "mem_ts", "mark": "mark_ts", "string": "string_ends"}
_POINTERS = {"op_gpu_ptr": "op_gpu_ids", "thread_roots_ptr": "thread_roots_ids"}
_MAX_DEPTH = 1 << 20
# float columns where NaN (and, for a grid's product, infinity) means "not known" (mlptui.trace.store)
_UNKNOWN_ALLOWED = frozenset({"gpu_grid_blocks", "gpu_blocks_per_sm", "gpu_occupancy_pct"})
# launch counts: -1 where not known, else what mlptui.trace.parse.launch can make (lowest, past the highest)
_COUNTS = {"gpu_threads": (-1, (1 << 62) + 1), "gpu_registers": (-1, 1 << 40), "gpu_shared_memory": (-1, 1 << 40)}


def check_entry(cols: dict[str, np.ndarray], facts: dict[str, Any]) -> None:
    """Raise ValueError unless `cols` (an entry's columns) and `facts` (its args facts) fit together."""
    unknown = set(cols) - set(_SCHEMA)
    missing = set(_SCHEMA) - set(cols)
    if unknown or missing:
        raise ValueError(f"columns {sorted(unknown | missing)[:3]} unexpected or missing")
    events = facts.get("events")
    if isinstance(events, bool) or not isinstance(events, int) or events < 0:
        raise ValueError("the entry's event count is not a count")
    sizes = {table: len(cols[col]) for table, col in _LENGTH_OF.items()}
    sizes["event"] = events
    sizes["depth"] = _MAX_DEPTH
    for name, (dtype, rows, ids) in _SCHEMA.items():
        col = cols[name]
        if col.dtype != dtype or col.ndim != 1:
            raise ValueError(f"column {name}: dtype {col.dtype}, {col.ndim} dimensions")
        if rows is not None:
            want = sizes[rows.removesuffix("+1")] + rows.endswith("+1")
            if len(col) != want:
                raise ValueError(f"column {name}: {len(col)} rows, not {want}")
        if ids is not None and len(col):
            table, lowest = ids
            if int(col.min()) < lowest or int(col.max()) >= sizes[table]:
                raise ValueError(f"column {name}: an id outside {table} ids {lowest}..{sizes[table] - 1}")
        if dtype == _F and name not in _UNKNOWN_ALLOWED and not np.isfinite(col).all():
            raise ValueError(f"column {name}: a value that is not a finite number")
    for name, (low, high) in _COUNTS.items():
        col = cols[name]
        if len(col) and (int(col.min()) < low or int(col.max()) >= high):
            raise ValueError(f"column {name}: a count outside {low}..{high - 1}")
    for name in _UNKNOWN_ALLOWED:
        col = cols[name]
        if len(col) and (col < 0).any():
            raise ValueError(f"column {name}: a negative value")
    for ptr_name, ids_name in _POINTERS.items():
        ptr = cols[ptr_name]
        if ptr[0] != 0 or ptr[-1] != len(cols[ids_name]) or (len(ptr) > 1 and np.any(np.diff(ptr) < 0)):
            raise ValueError(f"column {ptr_name}: offsets that do not fit {ids_name}")
    ends = cols["string_ends"]
    if len(ends) and (ends[0] < 0 or ends[-1] != len(cols["strings"]) or np.any(np.diff(ends) < 0)):
        raise ValueError("column string_ends: offsets that do not fit the strings")
    parent = cols["op_parent"]
    if np.any(parent >= np.arange(len(parent))):
        raise ValueError("column op_parent: a parent that is not an earlier op")
    for dur in ("op_dur", "gpu_dur", "step_dur"):
        if len(cols[dur]) and cols[dur].min() < 0:
            raise ValueError(f"column {dur}: a negative duration")
