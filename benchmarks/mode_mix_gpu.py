"""Does the company a mode keeps in a sweep cell change its paired ratio against eager? On a CUDA GPU.

The sweep times the fused path forced on against eager in a calibration of three modes (eager, its
twin, fused-forced), then the routed module in a verification of five (plus torch.compile and Liger).
In run 16 (H200) the fused path read 4-5 % faster than eager in the first and level with it in the
second at 5120x13824, 1-64 rows. This script times the same forced module against eager in several
mixes of neighbours, each as the sweep times a cell (runners/mlptui/runners/bench/sweep.py::cell_times: balanced orders, L2
flushed, synchronized calls):

- base: eager, eager-again, fused-forced (the calibration);
- +compile, +kernels, +both (the verification's company);
- +python: a neighbour that runs ~100 µs of pure Python and no GPU work (does cold host caches alone
  do it?).

Writes $OUT/mode_mix.json. Usage: python3 benchmarks/mode_mix_gpu.py [DIMxHIDDEN:ROWS ...]
"""

from __future__ import annotations

import json
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from mlptui.runners.bench.sweep import EAGER_AGAIN, mode_modules, pass_call, timed_cell
from mlptui.runners.fused import FusedGeGLUMLP

CELLS = ("5120x13824:1", "5120x13824:64", "4096x11008:16", "4096x11008:64")
MIXES: dict[str, tuple[str, ...]] = {
    "base": (), "+compile": ("compile",), "+kernels": ("kernels",), "+both": ("compile", "kernels"),
    "+python": ("python",),
}


def log(msg: str) -> None:
    print(msg, flush=True)


def python_filler() -> Callable[[], Any]:
    """~100 µs of interpreter work over fresh objects, no GPU work: what another library's host path
    does to the caches the next call finds."""
    data = [random.random() for _ in range(600)]

    def run() -> Any:
        table = {f"k{i}": v for i, v in enumerate(data)}
        return sorted(table.items(), key=lambda kv: kv[1])[:3]
    return run


def main() -> int:
    out_dir = Path(os.environ.get("OUT", ".bench"))
    out_dir.mkdir(parents=True, exist_ok=True)
    cells = [c.split(":") for c in (sys.argv[1:] or CELLS)]
    doc: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cells": []}
    dtype = torch.bfloat16
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    built: dict[str, dict[str, Any]] = {}
    for shape, rows in cells:
        dim, hidden = (int(v) for v in shape.split("x"))
        if shape not in built:
            info: dict[str, Any] = {}
            mods = mode_modules(dim, hidden, dtype, ("compile", "kernels"), info)
            forced = FusedGeGLUMLP(dim, hidden, policy="fused", device="cuda", dtype=dtype)
            forced.load_state_dict(mods["eager"].state_dict())
            mods["fused-forced"] = forced
            built = {shape: mods}  # one family's modules at a time
        mods = built[shape]
        x = torch.randn(int(rows), dim, device="cuda", dtype=dtype)
        with torch.no_grad():
            fns_all: dict[str, Callable[[], Any]] = {m: pass_call(mods[m], x, False)
                                                     for m in ("eager", EAGER_AGAIN, "fused-forced", "compile",
                                                               "kernels") if m in mods}
            fns_all["python"] = python_filler()
            for fn in fns_all.values():
                fn()  # compiles / tunes
            for mix, extra in MIXES.items():
                fns = {m: fns_all[m] for m in ("eager", EAGER_AGAIN, "fused-forced", *extra) if m in fns_all}
                best, paired = timed_cell(fns)
                cell = {"shape": shape, "rows": int(rows), "mix": mix,
                        "median_us": {m: round(v, 2) for m, v in best.items()}, "paired_vs_eager": paired}
                doc["cells"].append(cell)
                log(f"{shape} rows {rows} {mix:9}: forced {paired['fused-forced']} twin {paired[EAGER_AGAIN]} "
                    f"(eager {best['eager']:.1f} us, forced {best['fused-forced']:.1f} us)")
        (out_dir / "mode_mix.json").write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
