"""How far does a cell's paired ratio move between two timings of it made at different moments? On a CUDA GPU.

In run 16's committed sweeps the fused path's paired ratio against eager moved between the calibration
and the verification of the same cell with a standard deviation of 4-5 % where eager's call took under
300 µs, and 0.3-1.4 % above (110 cells, both GPUs), while each timing's own ~95 % interval was about
±1 %. This script times a few such cells as the sweep does (runners/mlptui/runners/bench/sweep.py::timed_cell: eager, its
twin and the fused path forced on), several times each, the cells taking turns, so each cell is timed
in several "phases" seconds apart. Every phase runs twice: with the process free to move between CPUs,
and pinned to the one CPU it is on (is the drift the host thread moving between cores?). Per phase it
also records eager's host enqueue time (is the host itself slower?) and the CPU the process is on.

Results: benchmarks/FUSED_NOTES.md run 17. Writes $OUT/phase_drift.json. Usage: python3 benchmarks/phase_drift_gpu.py [PHASES] [DIMxHIDDEN:ROWS ...]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

import torch

from mlptui.runners.bench.modes import enqueue_us
from mlptui.runners.bench.sweep import EAGER_AGAIN, mode_modules, pass_call, timed_cell
from mlptui.runners.fused import FusedGeGLUMLP

CELLS = ("1536x8960:512", "5120x13824:1", "2048x5632:2048", "4096x11008:16", "1024x2816:128")


def log(msg: str) -> None:
    print(msg, flush=True)


def current_cpu() -> int:
    """The CPU this process last ran on (/proc/self/stat field 39)."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[36])


def host_facts() -> dict[str, Any]:
    facts: dict[str, Any] = {"cpus": os.cpu_count(), "affinity": sorted(os.sched_getaffinity(0))}
    gov = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    facts["governor"] = gov.read_text().strip() if gov.exists() else None
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            facts["cpu_model"] = line.split(":", 1)[1].strip()
            break
    return facts


def main() -> int:
    out_dir = Path(os.environ.get("OUT", ".bench"))
    out_dir.mkdir(parents=True, exist_ok=True)
    args = sys.argv[1:]
    phases = int(args.pop(0)) if args and args[0].isdigit() else 6
    cells = [c.split(":") for c in (args or CELLS)]
    dtype = torch.bfloat16
    everyone = os.sched_getaffinity(0)
    doc: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                           "host": host_facts(), "phases": []}
    log(json.dumps(doc["host"])[:300])
    built: dict[str, Any] = {}
    for shape, rows in cells:
        dim, hidden = (int(v) for v in shape.split("x"))
        mods = mode_modules(dim, hidden, dtype, (), {})
        forced = FusedGeGLUMLP(dim, hidden, policy="fused", device="cuda", dtype=dtype)
        forced.load_state_dict(mods["eager"].state_dict())
        x = torch.randn(int(rows), dim, device="cuda", dtype=dtype)
        fns = {"eager": pass_call(mods["eager"], x, False), EAGER_AGAIN: pass_call(mods[EAGER_AGAIN], x, False),
               "fused-forced": pass_call(forced, x, False)}
        built[f"{shape}:{rows}"] = fns
    with torch.no_grad():
        for fns in built.values():
            for fn in fns.values():
                fn()  # tunes
        for k in range(phases):
            for cell, fns in built.items():
                for variant in ("free", "pinned"):
                    cpu = current_cpu()
                    os.sched_setaffinity(0, {cpu} if variant == "pinned" else everyone)
                    try:
                        best, paired = timed_cell(fns)
                        host = enqueue_us(fns["eager"])
                    finally:
                        os.sched_setaffinity(0, everyone)
                    row = {"phase": k, "cell": cell, "variant": variant, "cpu": cpu, "cpu_after": current_cpu(),
                           "median_us": {m: round(v, 2) for m, v in best.items()},
                           "paired_vs_eager": paired, "eager_host_us": round(host, 2)}
                    doc["phases"].append(row)
                    log(f"phase {k} {cell:15} {variant:6} cpu {cpu:3}: forced {paired['fused-forced'][0]:.3f} "
                        f"twin {paired[EAGER_AGAIN][0]:.3f} eager {best['eager']:.1f} us "
                        f"forced {best['fused-forced']:.1f} us host {host:.1f} us")
            (out_dir / "phase_drift.json").write_text(json.dumps(doc, indent=1))
    log("summary: per cell and variant, the forced ratio over phases (mean, sd, min, max) and eager's median")
    for cell in built:
        for variant in ("free", "pinned"):
            rs = [r["paired_vs_eager"]["fused-forced"][0] for r in doc["phases"]
                  if r["cell"] == cell and r["variant"] == variant]
            es = [r["median_us"]["eager"] for r in doc["phases"] if r["cell"] == cell and r["variant"] == variant]
            log(f"{cell:15} {variant:6} ratio {statistics.mean(rs):.3f} sd {statistics.pstdev(rs):.3f} "
                f"[{min(rs):.3f}, {max(rs):.3f}]; eager {min(es):.0f}-{max(es):.0f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
