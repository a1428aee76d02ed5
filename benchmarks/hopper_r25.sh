#!/usr/bin/env bash
# Run 25 on whichever Hopper comes (benchmarks/FUSED_NOTES.md, "Run 25"): on an H200, the fp16 sweep it still
# lacks (run 21's commands, as for its bf16 sweep in run 24), then the turn-taking ping-pong gate/up kernel;
# on an H100, the kernel alone. The kernel's part: its GPU test (the ordered form, both dtypes, three shapes),
# then its timing beside cuBLAS and the portable kernel.
# Everything lands in $OUT: GPU-env.txt; on an H200 h200-fp16.json and .log; ws-ordered-GPU.log and .json.
# usage: benchmarks/hopper_r25.sh   (with the carried wheels in .whl/, as benchmarks/gpu_sweep.sh takes them)
set -uo pipefail
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H200*) gpu=h200 ;; *) gpu=h100 ;; esac
if [ "$gpu" = h200 ]; then
  bash benchmarks/hopper_r21.sh h200 fp16
else
  bash benchmarks/hopper_r21.sh h100 -      # the card, driver and versions only
fi
cat "$OUT/$gpu-env.txt"
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl >/dev/null
export PYTHONPATH="/tmp/site:$PWD/tui:$PWD/runners" PYTHONUNBUFFERED=1
log=$OUT/ws-ordered-$gpu.log
timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fused_ws_gpu.py -k "True-True" 2>&1 \
  | tail -6 | tee "$log" || exit 1
timeout 150 python3 benchmarks/gateup_ws_gpu.py --only ordered --out "$OUT/ws-ordered-$gpu.json" 2>&1 \
  | tail -30 | tee -a "$log"
