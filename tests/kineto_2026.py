"""A trace as Kineto writes it since its 2026 changes (schemaVersion still 1), each field written from the
writer code of pytorch/kineto, read at these commits:

- 185fe9c531af (#1330) libkineto/src/CuptiActivity.h, GpuActivity<kernel>::metadataJson: the kernel's
  `"occupancy": {activeBlocksPerMultiprocessor, limitingFactors ("WARPS|REGS", "none" for no bit),
  blockLimitRegs, blockLimitSharedMem, blockLimitWarps, blockLimitBlocks, blockLimitBarriers,
  allocatedRegistersPerBlock, allocatedSharedMemPerBlock}` after "est. achieved occupancy %";
  DeviceProperties.cpp computeOccupancyMetrics runs cuda_occupancy.h with FUNC_SHMEM_LIMIT_DEFAULT and
  maxDynamicSharedSizeBytes 0 (no opt-in above sharedMemPerBlock, 48 KiB).
- 094d3c1d0723 (#1420) getChannelMetadata: `"channel": channelID, "channel_type": int` on kernels,
  memcpys and memsets (CUpti_ChannelType: 1 compute, 2 async memcpy).
- 041e7ce99f15 (#1356) output_json.cpp handleActivity: a "Stream Sync" (cat cuda_sync) goes on tid
  stream + 1000000 of its device's pid, after `thread_name` "stream N (sync)" and `thread_sort_index` N
  metadata; its args (CudaSyncActivity::metadataJson): cuda_sync_kind, stream, correlation, device, context.
- 2b15a605651b (#1296) output_json.cpp: `"Seq": N` appended to a collective kernel's args.
- e8f56bd8cb58 (#1530) handleCounterEvent: for HARDWARE_COUNTERS, one `{"ph": "C", "cat":
  "hardware_counters", "name": <metric>, "pid": "GPU N Counters", "tid": <resource>, "ts", "args": {"":
  value}}` per metric per sample (pid a JSON string).
- 9612d061097c (#1460): no top-level "WARNING"/"ERROR" arrays any more (older traces may have them).
"""

from __future__ import annotations

import copy
from typing import Any

# an H200's deviceProperties as Kineto writes them (the bundled traces)
H200 = {"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320, "computeMajor": 9, "computeMinor": 0,
        "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32,
        "sharedMemPerBlock": 49152, "numSms": 132, "regsPerMultiprocessor": 65536,
        "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472}

GEMM = "nvjet_sm90_tst_128x128_64x4_1x2_h_bz_TNT"
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(int, F, A)"
STREAM = 7
SYNC_TID = STREAM + 1_000_000
# CUPTI PM-sampling metrics (Nsight Compute names): SM throughput and achieved occupancy, in % of peak
SM_THROUGHPUT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
WARPS_ACTIVE = "sm__warps_active.avg.pct_of_peak_sustained_active"
SM_ACTIVE = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
COUNTER_SAMPLES = [(1000.0, {SM_THROUGHPUT: 62.5, WARPS_ACTIVE: 11.75, SM_ACTIVE: 99.0}),
                   (1100.0, {SM_THROUGHPUT: 71.5, WARPS_ACTIVE: 12.25, SM_ACTIVE: 97.5}),
                   (1200.0, {SM_THROUGHPUT: 8.0, WARPS_ACTIVE: 40.0, SM_ACTIVE: 30.0}),
                   (1400.0, {SM_THROUGHPUT: 0.0, WARPS_ACTIVE: 0.0, SM_ACTIVE: 0.0})]     # after the step


def _occupancy(active: int, factors: str, regs: int, smem: int, warps: int, blocks: int, barriers: int,
               regs_block: int, smem_block: int) -> dict[str, Any]:
    return {"activeBlocksPerMultiprocessor": active, "limitingFactors": factors, "blockLimitRegs": regs,
            "blockLimitSharedMem": smem, "blockLimitWarps": warps, "blockLimitBlocks": blocks,
            "blockLimitBarriers": barriers, "allocatedRegistersPerBlock": regs_block,
            "allocatedSharedMemPerBlock": smem_block}


def _kernel(name: str, ts: float, dur: float, corr: int, grid: int, block: int, regs: int, smem: int,
            est: int, occupancy: dict[str, Any], channel: int, **extra: Any) -> dict[str, Any]:
    args = {"queued": 0, "device": 0, "context": 1, "stream": STREAM, "correlation": corr, "External id": corr,
            "registers per thread": regs, "shared memory": smem, "blocks per SM": grid / 132,
            "warps per SM": grid / 132 * block / 32, "grid": [grid, 1, 1], "block": [block, 1, 1],
            "est. achieved occupancy %": est, "occupancy": occupancy, "channel": channel, "channel_type": 1,
            **extra}
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": STREAM, "ts": ts, "dur": dur, "args": args}


def events(*, warning_arrays: bool = False) -> dict[str, Any]:
    """The whole document: a step with a GEMM above 48 KiB of shared memory (Kineto: 0 blocks, limited by
    SMEM), a GELU both calculators agree on, a memcpy, a stream synchronisation and counter samples."""
    cpu = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100, "tid": 100, "ts": 900.0,
         "dur": 400.0, "args": {"External id": 1}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 100, "ts": 910.0, "dur": 20.0,
         "args": {"External id": 11}},
        {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx", "pid": 100, "tid": 100, "ts": 915.0,
         "dur": 5.0, "args": {"External id": 11, "correlation": 11}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::gelu", "pid": 100, "tid": 100, "ts": 940.0, "dur": 10.0,
         "args": {"External id": 12}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100, "ts": 942.0,
         "dur": 4.0, "args": {"External id": 12, "correlation": 12}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 100, "tid": 100, "ts": 960.0,
         "dur": 4.0, "args": {"External id": 1, "correlation": 13}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 100, "tid": 100, "ts": 970.0,
         "dur": 280.0, "args": {"External id": 1, "correlation": 14}},
    ]
    gpu = [
        # 128 threads, 168 registers, 101.4 KiB of shared memory: ours 2 blocks (shared memory, opt-in limit);
        # Kineto's calculator without the opt-in finds no block fits
        _kernel(GEMM, 1000.0, 120.0, 11, 264, 128, 168, 103808, 0,
                _occupancy(0, "SMEM", 3, 0, 16, 32, 32, 21504, 104832), channel=5),
        # 128 threads, 32 registers, no shared memory: both say 16 blocks, limited by warps and registers
        _kernel(ELEMENTWISE, 1130.0, 40.0, 12, 1024, 128, 32, 0, 49,
                _occupancy(16, "WARPS|REGS", 16, 228, 16, 32, 32, 4096, 1024), channel=5),
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": STREAM,
         "ts": 1180.0, "dur": 30.0, "args": {"device": 0, "context": 1, "stream": STREAM, "correlation": 13,
                                             "bytes": 1048576, "memory bandwidth (GB/s)": 34.95,
                                             "channel": 2, "channel_type": 2}},
        {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": SYNC_TID, "ts": 975.0,
         "dur": 270.0, "args": {"cuda_sync_kind": "Stream Sync", "stream": STREAM, "correlation": 14,
                                "device": 0, "context": 1}},
    ]
    flows = []
    for corr, ts in ((11, 915.0), (12, 942.0), (13, 960.0)):
        flows.append({"ph": "s", "id": corr, "pid": 100, "tid": 100, "ts": ts, "cat": "ac2g", "name": "ac2g"})
    meta = [
        {"name": "process_name", "ph": "M", "ts": 900.0, "pid": 0, "tid": 0, "args": {"name": "python3"}},
        {"name": "process_labels", "ph": "M", "ts": 900.0, "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        {"name": "thread_name", "ph": "M", "ts": 900.0, "pid": 0, "tid": STREAM, "args": {"name": f"stream {STREAM} "}},
        {"name": "thread_name", "ph": "M", "ts": 975.0, "pid": 0, "tid": SYNC_TID,
         "args": {"name": f"stream {STREAM} (sync)"}},
        {"name": "thread_sort_index", "ph": "M", "ts": 975.0, "pid": 0, "tid": SYNC_TID,
         "args": {"sort_index": STREAM}},
    ]
    counters = [{"ph": "C", "cat": "hardware_counters", "name": metric, "pid": "GPU 0 Counters", "tid": 0, "ts": ts,
                 "args": {"": value}} for ts, sample in COUNTER_SAMPLES for metric, value in sample.items()]
    doc: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": [copy.deepcopy(H200)],
                           "cuda_runtime_version": 13010, "displayTimeUnit": "ms",
                           "baseTimeNanoseconds": 1790857026000000000,
                           "traceEvents": cpu + gpu + flows + meta + counters}
    if warning_arrays:
        doc["WARNING"] = ["CUPTI activity buffer dropped"]
        doc["ERROR"] = []
    return doc
