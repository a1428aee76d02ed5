#!/usr/bin/env bash
# Run 21 on one Hopper GPU, the same commands on the H100 and the H200 (benchmarks/FUSED_NOTES.md, run 21):
# the sweep over the six families in each given dtype, forward and forward+backward, eager against the
# fused module (routed, and its fused path forced on), at four of the standard grid's eleven row counts,
# evenly spread in log rows
# (the full grid in both dtypes on both GPUs does not fit one session's device time); the committed
# crossover table's model, with each family's calibration of this run folded in (--no-crossover); then,
# with `stability`, the article shape's training in three processes and a first call at a tuned bucket.
# Everything lands in $OUT: GPU-env.txt, GPU-DTYPE.json and .log per dtype, GPU-stability.json and .log.
# usage: [FAMILIES=DxH,…] benchmarks/hopper_r21.sh GPU DTYPES [stability]
#        (GPU: h100, h200 or auto; DTYPES: bf16, fp16, bf16,fp16 or - for none; FAMILIES: another order or subset)
set -uo pipefail
gpu=$1 dtypes=$2 extra=${3:-}
if [ "$gpu" = auto ]; then  # the card that came: a call may get either Hopper
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H200*) gpu=h200 ;; *) gpu=h100 ;; esac
fi
rows=1,128,2048,16384
families=${FAMILIES:-768x3072,1024x2816,2048x5632,1536x8960,4096x11008,5120x13824}
# the report names mlptui's version from package metadata, which a tree on PYTHONPATH lacks
mkdir -p /tmp/site/mlptui-0.1.0.dist-info
printf 'Metadata-Version: 2.1\nName: mlptui\nVersion: 0.1.0\n' > /tmp/site/mlptui-0.1.0.dist-info/METADATA
export PYTHONPATH="/tmp/site:$PWD/tui:$PWD/runners" PYTHONUNBUFFERED=1
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__,
"triton", triton.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())'
} > "$OUT/$gpu-env.txt" 2>&1
for dt in ${dtypes//,/ }; do
  [ "$dt" = - ] && continue
  start=$(date +%s)
  SWEEP_ARGS="--no-crossover --dtype $dt --sweep-modes eager,fused --sweep-rows $rows" \
    bash benchmarks/gpu_sweep.sh "$gpu-$dt" "$families" none || echo "sweep $gpu-$dt: exit $?"
  # the finished report holds everything the partial one had
  [ -s "$OUT/$gpu-$dt.json" ] && rm -f "$OUT/$gpu-$dt.partial.json"
  echo "sweep $gpu-$dt: $(( $(date +%s) - start )) s" | tee -a "$OUT/$gpu-env.txt"
done
if [ "$extra" = stability ]; then
  start=$(date +%s)
  python3 benchmarks/train_stability_gpu.py --procs 3 --shared-cache --first-calls 3 --name "$gpu-stability.json" \
    2>&1 | tee "$OUT/$gpu-stability.log"
  echo "stability: $(( $(date +%s) - start )) s" | tee -a "$OUT/$gpu-env.txt"
fi
