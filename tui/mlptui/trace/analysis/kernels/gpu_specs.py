"""Peak throughput of the GPUs traces come from, for the roofline.

Figures are dense (no structured sparsity) tensor-core TFLOP/s for bf16/fp16/tf32/fp8, plain
FP32 (CUDA-core / vector) TFLOP/s, and memory bandwidth in TB/s, from each vendor's datasheet
(titled in `source`). NVIDIA datasheets print tensor-core figures "with sparsity"; the dense
figure is half of that, which is what is stored. AMD MI250/MI250X packages hold two GCDs that
PyTorch sees as two devices, so their per-device figure is half the package's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GpuPeak:
    name: str
    bf16_tflops: float | None      # dense tensor core / matrix core
    fp16_tflops: float | None
    tf32_tflops: float | None
    fp32_tflops: float | None      # non-tensor FP32 (what an fp32 GEMM gets without TF32)
    fp8_tflops: float | None
    mem_tbps: float                # HBM / GDDR bandwidth, TB/s
    source: str                    # the datasheet the figures come from
    devices_per_package: int = 1   # figures above are per package; PyTorch sees this many devices in one

    def tflops_for(self, dtype: str | None) -> float | None:
        """Peak TFLOP/s of one visible device for a GEMM in `dtype` (bf16, f16, tf32, f32, fp8...)."""
        value = {
            "bf16": self.bf16_tflops, "f16": self.fp16_tflops, "tf32": self.tf32_tflops, "f32": self.fp32_tflops,
            "fp8": self.fp8_tflops, "fp8e4m3": self.fp8_tflops, "fp8e5m2": self.fp8_tflops,
        }.get(dtype or "")
        return None if value is None else value / self.devices_per_package

    @property
    def mem_gbps(self) -> float:
        """Bandwidth of one visible device, GB/s."""
        return self.mem_tbps * 1000.0 / self.devices_per_package


_A100 = "NVIDIA A100 Tensor Core GPU datasheet"
_H100 = "NVIDIA H100 Tensor Core GPU datasheet"
_H200 = "NVIDIA H200 Tensor Core GPU datasheet"

A100_SXM_40 = GpuPeak("NVIDIA A100 40GB SXM", 312, 312, 156, 19.5, None, 1.555, _A100)
A100_SXM_80 = GpuPeak("NVIDIA A100 80GB SXM", 312, 312, 156, 19.5, None, 2.039, _A100)
A100_PCIE_40 = GpuPeak("NVIDIA A100 40GB PCIe", 312, 312, 156, 19.5, None, 1.555, _A100)
A100_PCIE_80 = GpuPeak("NVIDIA A100 80GB PCIe", 312, 312, 156, 19.5, None, 1.935, _A100)
H100_SXM = GpuPeak("NVIDIA H100 SXM", 989.5, 989.5, 494.5, 67, 1979, 3.35, _H100)
H100_PCIE = GpuPeak("NVIDIA H100 PCIe", 756.5, 756.5, 378, 51, 1513, 2.0, _H100)
H100_NVL = GpuPeak("NVIDIA H100 NVL", 835.5, 835.5, 417.5, 60, 1670.5, 3.9, _H100)
H200_SXM = GpuPeak("NVIDIA H200 SXM", 989.5, 989.5, 494.5, 67, 1979, 4.8, _H200)
H200_NVL = GpuPeak("NVIDIA H200 NVL", 835.5, 835.5, 417.5, 60, 1670.5, 4.8, _H200)
L4 = GpuPeak("NVIDIA L4", 121, 121, 60, 30.3, 242.5, 0.3, "NVIDIA L4 Tensor Core GPU datasheet")
L40S = GpuPeak("NVIDIA L40S", 362.05, 362.05, 183, 91.6, 733, 0.864, "NVIDIA L40S GPU datasheet")
_V100 = "NVIDIA V100 Tensor Core GPU datasheet"
V100_SXM2 = GpuPeak("NVIDIA V100 SXM2", None, 125, None, 15.7, None, 0.9, _V100)
V100_PCIE = GpuPeak("NVIDIA V100 PCIe", None, 112, None, 14, None, 0.9, _V100)
V100S_PCIE = GpuPeak("NVIDIA V100S PCIe", None, 130, None, 16.4, None, 1.134, _V100)
MI250X = GpuPeak("AMD Instinct MI250X", 383, 383, None, 47.9, None, 3.2768, "AMD Instinct MI250X Accelerator datasheet",
                 devices_per_package=2)
MI250 = GpuPeak("AMD Instinct MI250", 362.1, 362.1, None, 45.3, None, 3.2768, "AMD Instinct MI250 Accelerator datasheet",
                devices_per_package=2)
MI300X = GpuPeak("AMD Instinct MI300X", 1307.4, 1307.4, 653.7, 163.4, 2614.9, 5.3,
                 "AMD Instinct MI300X Accelerator datasheet")

ALL_PEAKS = (A100_SXM_40, A100_SXM_80, A100_PCIE_40, A100_PCIE_80, H100_SXM, H100_PCIE, H100_NVL, H200_SXM,
             H200_NVL, L4, L40S, V100_SXM2, V100_PCIE, V100S_PCIE, MI250X, MI250, MI300X)

_WORD = re.compile(r"[a-z0-9]+")


def peak_for(device_name: str | None, total_mem_bytes: int | None = None) -> GpuPeak | None:
    """The peak table entry for a device as Kineto names it ("NVIDIA H100 80GB HBM3", "NVIDIA H200",
    "NVIDIA A100-SXM4-80GB", "AMD Instinct MI250X", ...). `total_mem_bytes` (deviceProperties'
    totalGlobalMem) tells A100 40 GB from 80 GB when the name does not. None for anything else:
    a guessed peak would make a wrong percentage look right."""
    if not device_name:
        return None
    low = device_name.lower()
    words = set(_WORD.findall(low))
    big_mem = total_mem_bytes is not None and total_mem_bytes > 60e9
    if "gh200" in words or "gb200" in words:
        return None
    if "h200" in words:
        return H200_NVL if "nvl" in words else H200_SXM
    if "h100" in words:
        if "nvl" in words:
            return H100_NVL
        return H100_PCIE if "pcie" in words else H100_SXM
    if "a100" in words:
        eighty = "80gb" in words or big_mem
        if "pcie" in words:
            return A100_PCIE_80 if eighty else A100_PCIE_40
        return A100_SXM_80 if eighty else A100_SXM_40
    if "l40s" in words:
        return L40S
    if "l4" in words:
        return L4
    if "v100s" in words:
        return V100S_PCIE
    if "v100" in words:
        return V100_PCIE if "pcie" in words else V100_SXM2
    if "mi300x" in words:
        return MI300X
    if "mi250x" in words:
        return MI250X
    if "mi250" in words:
        return MI250
    return None
