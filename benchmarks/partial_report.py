"""A bench report from a sweep's partial file (MLPTUI_SWEEP_PARTIAL: the results of every family finished so
far), for a sweep whose process ended before it wrote its report (killed at the device's time limit, or
failing at the final write). The header (device, versions, command) comes from the arguments, as the
machine printed them; the summary is recomputed from the rows by mlptui.runners.bench.report.summarize.

    python3 benchmarks/partial_report.py PARTIAL.json --device "NVIDIA H100 80GB HBM3" --slug h100 \
        --torch 2.11.0+cu130 --triton 3.6.0 --cuda 13.0 --dtype bf16 --rows 1,128,2048,16384 \
        --command "…" --why "…" --out benchmarks/results/run21/h100-bf16.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mlptui.runners.bench.report import summarize


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("partial", type=Path)
    for name in ("device", "slug", "torch", "triton", "cuda", "dtype", "rows", "command", "why"):
        ap.add_argument(f"--{name}", required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if args.out.exists():
        print(f"{args.out} exists; never overwritten", file=sys.stderr)
        return 2
    part = json.loads(args.partial.read_text())
    results = part["results"]
    families = list(dict.fromkeys(r["shape"] for r in results))
    doc = {"device": args.device, "device_slug": args.slug, "torch": args.torch, "triton": args.triton,
           "cuda": args.cuda, "command": args.command, "workload": "mlp", "dtype": args.dtype,
           "results": results, "errors": part.get("errors", []), "partial": args.why,
           "sweep": {"families": families, "rows": [int(r) for r in args.rows.split(",")],
                     "modes": ["eager", "fused"], "passes": ["fwd", "fwd+bwd"], "weights": part.get("weights"),
                     "summary": summarize(results)}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
