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

from mlptui.base.errors import MlptuiError
from mlptui.base.extras import install_hint

WORKLOADS = ("mlp",)
MODES = ("eager", "compile", "max-autotune", "kernels", "fused")  # mlptui.runners.bench.modes.MODES, without torch
SHAPE_NAMES = ("article", "seed", "decode16", "decode64", "decode")
DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workload", choices=WORKLOADS,
                        help="mlp: the GeGLU MLP in every mode (eager, compile, max-autotune, kernels, fused)")
    parser.add_argument("--shapes", default="article",
                        help="comma-separated: article (x[64,128,768], hidden 3072), seed (1024 rows, dim 1024, "
                             "hidden 4096), decode (= decode16,decode64: 16 / 64 rows at dim 768, hidden 3072), "
                             "or none (with --sweep)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {', '.join(MODES)}")
    parser.add_argument("--dtype", choices=tuple(DTYPES), default="bf16")
    parser.add_argument("--warmup-ms", type=float, default=25.0, help="do_bench warm-up budget (default 25)")
    parser.add_argument("--rep-ms", type=float, default=100.0, help="do_bench measurement budget (default 100)")
    parser.add_argument("--sweep", action="store_true",
                        help="also sweep rows x model-family dims (fused against eager, compile, Liger; fwd and "
                             "fwd+bwd), after measuring the crossover table the fused module routes by")
    parser.add_argument("--sweep-rows", default="1,16,64,128,256,512,1024,2048,4096,8192,16384",
                        help="comma-separated row counts of the sweep")
    parser.add_argument("--sweep-families", default="768x3072,1024x2816,2048x5632,1536x8960,4096x11008,5120x13824",
                        help="comma-separated DIMxHIDDEN of the sweep")
    parser.add_argument("--sweep-modes", default="eager,fused,compile,kernels", help="modes of the sweep")
    parser.add_argument("--passes", default="fwd,fwd+bwd", help="passes of the sweep: fwd, fwd+bwd")
    parser.add_argument("--sweep-weights", choices=("own", "shared"), default="own",
                        help="own: each mode a copy of the weights; shared: every mode reads eager's weight tensors")
    parser.add_argument("--no-crossover", action="store_true",
                        help="sweep with the committed crossover table instead of measuring it first")
    parser.add_argument("--crossover-table", type=Path,
                        help="read this GPU's crossover table from this file if it has one, else measure it "
                             "(over the sweep's families and rows) and write it there")
    parser.add_argument("--warm", action="store_true",
                        help="tune the fused kernel for every --sweep-families x --sweep-rows bucket and keep the "
                             "choices on disk (~/.cache/mlptui/fused), so later processes start without tuning; "
                             "times nothing")
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


def _sweep_args(args: argparse.Namespace) -> dict[str, Any]:
    try:
        rows = tuple(int(r) for r in args.sweep_rows.split(",") if r.strip())
        families = tuple(tuple(int(v) for v in f.lower().split("x")) for f in args.sweep_families.split(",")
                         if f.strip())
    except ValueError:
        raise MlptuiError("--sweep-rows takes integers and --sweep-families DIMxHIDDEN pairs") from None
    if not rows or any(r < 1 for r in rows) or not families or any(len(f) != 2 for f in families):
        raise MlptuiError("--sweep-rows takes integers >= 1 and --sweep-families DIMxHIDDEN pairs")
    modes = tuple(m.strip() for m in args.sweep_modes.split(",") if m.strip())
    passes = tuple(p.strip() for p in args.passes.split(",") if p.strip())
    if not modes or any(m not in ("eager", "fused", "compile", "kernels") for m in modes) or "eager" not in modes:
        raise MlptuiError("--sweep-modes: a subset of eager,fused,compile,kernels with eager in it")
    if not passes or any(p not in ("fwd", "fwd+bwd") for p in passes):
        raise MlptuiError("--passes: fwd and/or fwd+bwd")
    return {"rows": rows, "families": families, "modes": modes, "passes": passes}


def _crossover(args: argparse.Namespace, device: str, dtype: Any) -> dict[str, Any] | None:
    """This GPU's crossover entry (read, or measured), installed for the fused module of this run."""
    from mlptui.runners.bench import sweep
    from mlptui.runners.fused import crossover

    path: Path | None = args.crossover_table
    doc = json.loads(path.read_text()) if path is not None and path.exists() else {}
    entry = doc.get("devices", {}).get(device)
    if entry is None:
        if args.no_crossover:
            return None
        sweep_args = _sweep_args(args)
        entry = sweep.measure_crossover(sweep_args["families"], sweep_args["rows"], dtype, 10.0, _note)
        if path is not None:
            path.write_text(json.dumps(crossover.merge_device(doc, device, entry), indent=1) + "\n")
    model = crossover.model_from_table({"devices": {device: entry}}, device)
    if model is not None:
        crossover.install(model)
    return entry


def _note(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def warm(args: argparse.Namespace) -> int:
    """`bench mlp --warm`: fill the fused kernel's tuning cache (on a GPU, or in Triton's interpreter)."""
    sweep_args = _sweep_args(args)
    try:
        import torch
        import triton  # noqa: F401
    except ImportError as exc:
        raise MlptuiError(f"bench --warm needs torch and triton ({exc}); add them with: {install_hint('gpu')}") from None
    interpreted = os.environ.get("TRITON_INTERPRET", "") == "1"
    if not torch.cuda.is_available() and not interpreted:
        raise MlptuiError("bench --warm needs a CUDA GPU (or TRITON_INTERPRET=1), and torch sees none")
    from mlptui.runners.fused.launcher import GateUpLauncher
    from mlptui.runners.fused.launcher import warm as warm_buckets

    dtype = getattr(torch, DTYPES[args.dtype])
    device = "cpu" if interpreted else "cuda"
    chosen: dict[str, str] = {}
    for dim, hidden in sweep_args["families"]:
        _note(f"tuning {dim}x{hidden} {args.dtype} at rows {','.join(map(str, sweep_args['rows']))}")
        chosen.update(warm_buckets(hidden, dim, dtype, list(sweep_args["rows"]), device))
    probe = GateUpLauncher(torch.zeros((1, 1), device=device, dtype=dtype), torch.zeros((1, 1), device=device,
                                                                                     dtype=dtype))
    doc = {"cache": str(probe.disk_cache()), "tuned": chosen}
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        for key, label in sorted(chosen.items()):
            print(f"{key:40s} {label}")
        print(f"kept in {doc['cache']}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.warm:
        return warm(args)
    if args.shapes != "none":
        _check_names(args.shapes, SHAPE_NAMES, "shape")
    _check_names(args.modes, MODES, "mode")
    if args.out is not None and args.out.exists():
        raise MlptuiError(f"{args.out} exists; bench never overwrites a file")
    try:
        import torch
        import triton
    except ImportError as exc:
        raise MlptuiError(f"bench needs torch and triton ({exc}); add them with: {install_hint('gpu')}") from None
    if not torch.cuda.is_available():
        raise MlptuiError("bench needs a CUDA GPU, and torch sees none")

    from mlptui.runners.bench import modes as bench
    from mlptui.runners.record.environment import device_info, versions

    shapes = bench.resolve_shapes(args.shapes) if args.shapes != "none" else []
    modes = bench.resolve_modes(args.modes)
    dev = device_info("cuda")
    command = "mlptui bench " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if len(sys.argv) > 1 and \
        sys.argv[1] == "bench" else f"mlptui bench {args.workload} --shapes {args.shapes} --modes {args.modes}"
    _note(f"{dev['name']}: {', '.join(modes)} at {', '.join(s.name for s in shapes)} ({args.dtype})")
    dtype = getattr(torch, DTYPES[args.dtype])
    crossover_entry = _crossover(args, dev["name"], dtype) if args.sweep or args.crossover_table else None
    report = bench.bench_mlp(shapes, modes, dtype=dtype, warmup_ms=args.warmup_ms, rep_ms=args.rep_ms, note=_note) \
        if shapes else {"results": [], "errors": [], "dtype": args.dtype, "shapes": {}}
    if crossover_entry is not None:
        report["crossover"] = crossover_entry
    if args.sweep:
        from mlptui.runners.bench import sweep
        from mlptui.runners.bench.report import summarize

        sweep_args = _sweep_args(args)
        rows, errors, info = sweep.sweep(sweep_args["families"], sweep_args["rows"], sweep_args["modes"],
                                         sweep_args["passes"], dtype, _note, shared=args.sweep_weights == "shared")
        report["results"].extend(rows)
        report["errors"].extend(errors)
        if crossover_entry is not None:  # the committed table routes by this run's calibration
            from mlptui.runners.fused import crossover

            report["crossover"] = crossover.fold_entry(crossover_entry, rows, command)
        report["sweep"] = {"families": [f"{d}x{h}" for d, h in sweep_args["families"]],
                           "rows": list(sweep_args["rows"]), "modes": list(sweep_args["modes"]),
                           "passes": list(sweep_args["passes"]), **info,
                           "timing": f"every cell: median of synchronized calls per mode ({sweep.HOST_BOUND_CALLS} "
                                     f"where calls are short, at least {sweep.MIN_CALLS} where "
                                     f"{sweep.CELL_BUDGET_S} s would not hold them), modes alternating call by call, "
                                     f"L2 flushed before each, after {sweep.BURN_S} s of the cell's own work; collector "
                                     f"paused; verdicts: each mode's paired ratio against eager (median over rounds of the round's "
                                     f"ratio, ~95 % order-statistic interval: paired_vs_eager); a second eager module with its "
                                     f"own weights (eager-again) as the cell's noise; the fused module, eager, eager-again and "
                                     f"the fused path forced on (fused-forced) timed as one group, compile and kernels with eager as another (their "
                                     f"vs_ ratios meet through eager); compile: "
                                     f"torch.compile(dynamic=True) per family",
                           "summary": summarize(rows)}
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
