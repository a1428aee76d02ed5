"""`mlptui bench WORKLOAD`: unprofiled timings of every mode of a workload in one process.

`--json` prints {"device", "torch", "triton", "command", "results": [{"mode", "shape", "median_us",
"tflops", "floor_pct", "speedup_vs_eager", "rel_err", "host_us", ...}], "errors", "fused", "timing",
...}; the floor (mode "cublas-3gemm") is the three cuBLAS GEMMs alone, measured in the same run.
Torch is imported only inside run(), so `mlptui --help` never pays for it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from mlptui.contract.errors import MlptuiError

WORKLOADS = ("mlp",)
MODES = ("eager", "compile", "max-autotune", "kernels", "fused")  # mlptui.runners.bench.MODES, without torch
SHAPE_NAMES = ("article", "seed", "decode16", "decode64", "decode")
DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workload", choices=WORKLOADS,
                        help="mlp: the GeGLU MLP in every mode (eager, compile, max-autotune, kernels, fused)")
    parser.add_argument("--shapes", default="article",
                        help="comma-separated: article (x[64,128,768], hidden 3072), seed (1024 rows, dim 1024, "
                             "hidden 4096), decode (= decode16,decode64: 16 / 64 rows at dim 768, hidden 3072)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {', '.join(MODES)}")
    parser.add_argument("--dtype", choices=tuple(DTYPES), default="bf16")
    parser.add_argument("--warmup-ms", type=float, default=25.0, help="do_bench warm-up budget (default 25)")
    parser.add_argument("--rep-ms", type=float, default=100.0, help="do_bench measurement budget (default 100)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    parser.add_argument("--out", type=Path, help="also write the JSON report to this file (never overwritten)")


def _check_names(spec: str, known: tuple[str, ...], what: str) -> None:
    for part in (p.strip() for p in spec.split(",")):
        if part and part not in known:
            raise MlptuiError(f"unknown {what} {part!r} (choose from {', '.join(known)})")
    if not any(p.strip() for p in spec.split(",")):
        raise MlptuiError(f"--{what}s is empty")


def write_new_file(path: Path, text: str) -> None:
    """Write atomically (temp file in the same folder, then a link that fails if the name exists)."""
    folder = path.parent if str(path.parent) else Path(".")
    if path.exists():
        raise MlptuiError(f"{path} exists; bench never overwrites a file")
    if not folder.is_dir():
        raise MlptuiError(f"folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix="-" + path.name, dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise MlptuiError(f"{path} exists; bench never overwrites a file") from None
    finally:
        os.unlink(tmp)


def _note(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    _check_names(args.shapes, SHAPE_NAMES, "shape")
    _check_names(args.modes, MODES, "mode")
    if args.out is not None and args.out.exists():
        raise MlptuiError(f"{args.out} exists; bench never overwrites a file")
    try:
        import torch
        import triton
    except ImportError as exc:
        raise MlptuiError(f"bench needs torch and triton (pip install 'mlptui[gpu]'): {exc}") from None
    if not torch.cuda.is_available():
        raise MlptuiError("bench needs a CUDA GPU, and torch sees none")

    from mlptui.runners import bench
    from mlptui.runners.environment import device_info, versions

    shapes = bench.resolve_shapes(args.shapes)
    modes = bench.resolve_modes(args.modes)
    dev = device_info("cuda")
    command = "mlptui bench " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if len(sys.argv) > 1 and \
        sys.argv[1] == "bench" else f"mlptui bench {args.workload} --shapes {args.shapes} --modes {args.modes}"
    _note(f"{dev['name']}: {', '.join(modes)} at {', '.join(s.name for s in shapes)} ({args.dtype})")
    report = bench.bench_mlp(shapes, modes, dtype=getattr(torch, DTYPES[args.dtype]),
                             warmup_ms=args.warmup_ms, rep_ms=args.rep_ms, note=_note)
    doc: dict[str, Any] = {"device": dev["name"], "device_slug": dev["slug"], "torch": torch.__version__,
                           "triton": triton.__version__, "cuda": torch.version.cuda, "command": command,
                           "workload": args.workload, **report, "versions": versions(),
                           "device_info": {k: dev[k] for k in ("capability", "multi_processor_count",
                                                                "total_memory", "L2_cache_size") if k in dev}}
    text = json.dumps(doc, indent=1)
    if args.out is not None:
        write_new_file(args.out, text + "\n")
    if args.json:
        print(text)
    else:
        print(f"{doc['device']}  torch {doc['torch']}  triton {doc['triton']}  {args.dtype}")
        print(bench.render_table(report))
    # a mode that could not run (no Liger here, say) is reported; a wrong result fails the command
    return 1 if any(e["kind"] == "inaccurate" for e in report["errors"]) else 0
