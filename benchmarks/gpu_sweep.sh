#!/usr/bin/env bash
# One part of the fused-MLP sweep on a GPU machine, small enough for a 10-minute command: installs the
# carried wheels (.whl/: liger-kernel, orjson) into /tmp/site and puts this tree on the path, then runs
# `mlptui bench mlp --sweep` over the given families (crossover model measured for them, calibrated,
# verified), writing $OUT/NAME.json and its log. Merge the parts of one GPU with
#   python -m mlptui.runners.bench.report part*.json --out sample_traces/bench/GPU.json --table runners/mlptui/runners/fused/crossover.json
# usage: [BENCH_MODES=eager,compile,kernels,fused] [SWEEP_ARGS="--sweep-weights shared …"] \
#        benchmarks/gpu_sweep.sh NAME FAMILIES SHAPES
#        (SHAPES: none, or e.g. article,seed,decode; BENCH_MODES: the modes timed at SHAPES; SWEEP_ARGS: more
#        options of `bench mlp`, split on spaces)
set -euo pipefail
name=$1 families=$2 shapes=${3:-none}
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl >/dev/null
# the tree's two source roots on the path, as the development install puts them, without a build
export PYTHONPATH="/tmp/site:$PWD/tui:$PWD/runners" PYTHONUNBUFFERED=1 MLPTUI_SWEEP_PARTIAL="$OUT/$name.partial.json"
python3 - bench mlp --shapes "$shapes" --sweep --sweep-families "$families" \
  ${BENCH_MODES:+--modes "$BENCH_MODES"} ${SWEEP_ARGS:-} --crossover-table "/tmp/$name-crossover.json" --out "$OUT/$name.json" <<'PY' 2>&1 | tee "$OUT/$name.log" | grep -v "^calibration "
import sys
from mlptui.cli import main
sys.exit(main(sys.argv[1:]))
PY
