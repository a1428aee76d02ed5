"""Which kernels ran on Tensor Cores (matrix units) and which ops could have.

A kernel uses Tensor Cores when its name carries a matrix-instruction or library marker: the MMA shapes
and instruction names NVIDIA's libraries put in kernel names (`hmma`, `wgmma`, `s16816`, `h884`, …),
cuBLAS's `nvjet` (Hopper+ GEMMs, always on Tensor Cores), CUTLASS/cuDNN `xmma` and `tensorop`
kernels, cuDNN's Tensor-Core convolution kernels, AMD's MFMA (`MT…_MI…` Tensile tiles, `mfma`), and the
Blackwell GEMMs of TensorRT-LLM's trtllm-gen (`bmm_MxE4m3_MxE2m1…_sm100f`: MXFP4/MXFP8 on tcgen05 MMA).
A kernel whose name says `sgemm`/`dgemm` without a Tensor-Core marker runs on the FP32/FP64 pipes, and so
does an `xmma` kernel whose name says `ffma`/`dfma` (cuBLAS's FP32 GEMM on Hopper,
`sm80_xmma_gemm_f32f32_…_ffma_…`: the xmma template, CUDA-core arithmetic).

An op is Tensor-Core eligible when it is a matrix product or a convolution (forward or backward): the
ops whose kernels could use Tensor Cores given a suitable dtype (fp16/bf16/tf32/int8/fp8).
"""

from __future__ import annotations

import re
from functools import lru_cache

from mlptui.trace.names.trtllm_gen import GEN_GEMM

# Substrings of kernel names that mean a Tensor-Core (matrix unit) instruction path.
_TC_MARKERS = (
    "hmma", "wgmma", "imma", "gmma", "mma_sync", "tensorop", "xmma", "nvjet", "h884", "s884", "h1688", "s1688",
    "i8816", "16816", "c1688", "1688gemm", "884gemm", "conv1x1", "dgrad_1x1_stride_2x2", "first_layer_wgrad_kernel",
    "conv2d_c1_k1", "direct_group", "tf32", "bf16gemm", "f16gemm", "mfma", "tcgen05", "utcmma",
    "sm90_xmma", "sm80_xmma", "cutlass_80_tensorop", "cutlass_90_tensorop", "flash_fwd", "flash_bwd",
    "fmha_", "fmha",
)
# Tensile (rocBLAS/hipBLASLt) kernel tiles carry `_MI<m>x<n>x<k>` when they use MFMA instructions.
_TENSILE_MFMA = re.compile(r"_MI\d+x\d+x\d+")
# Blackwell GEMMs that TensorRT-LLM's trtllm-gen writes (MXFP4/MXFP8/NVFP4/FP8/bf16 on tcgen05 MMA):
# `bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_…_sm100f` (mlptui.trace.names.trtllm_gen).

_TC_OPS = frozenset({
    "aten::_convolution", "aten::_convolution_nogroup", "aten::conv1d", "aten::conv2d", "aten::conv3d",
    "aten::conv_tbc", "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d",
    "aten::convolution", "aten::cudnn_convolution", "aten::cudnn_convolution_transpose",
    "aten::convolution_backward", "aten::cudnn_convolution_backward", "aten::cudnn_convolution_backward_input",
    "aten::cudnn_convolution_backward_weight", "aten::cudnn_convolution_transpose_backward",
    "aten::miopen_convolution", "aten::mkldnn_convolution",
    "aten::addmm", "aten::addmm_", "aten::_addmm_activation", "aten::addmv", "aten::addr", "aten::matmul",
    "aten::mm", "aten::mv", "aten::linear", "aten::addbmm", "aten::baddbmm", "aten::bmm", "aten::einsum",
    "aten::chain_matmul", "aten::linalg_multi_dot", "aten::_scaled_mm", "aten::_int_mm",
    "aten::_thnn_fused_lstm_cell", "aten::_thnn_fused_gru_cell", "aten::lstm_cell", "aten::gru_cell",
    "aten::rnn_tanh_cell", "aten::rnn_relu_cell", "aten::prelu",
    "aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention",
    "aten::_flash_attention_forward", "aten::_efficient_attention_forward",
    "aten::_scaled_dot_product_flash_attention_backward", "aten::_flash_attention_backward",
    "aten::_scaled_dot_product_efficient_attention_backward", "aten::_efficient_attention_backward",
})
# Autograd nodes (backward) of the ops above: `MmBackward0`, `AddmmBackward0`, `ConvolutionBackward0`, …
_TC_BACKWARD = re.compile(
    r"^(?:autograd::engine::evaluate_function: )?(?:Mm|Addmm|Bmm|Baddbmm|Addbmm|Addmv|Mv|Convolution|"
    r"CudnnConvolution|CudnnConvolutionTranspose|ConvolutionBackward|MkldnnConvolution|Linear|ScaledDotProduct"
    r"\w*Attention)Backward\d*$")


@lru_cache(maxsize=65536)
def uses_tensor_cores(kernel_name: str) -> bool:
    """True when the kernel's name shows it runs on Tensor Cores (see the module docstring)."""
    lower = kernel_name.lower()
    if "_ffma_" in lower or "_dfma_" in lower:     # cuBLAS xmma kernels on the FP32/FP64 FMA pipes
        return False
    if any(marker in lower for marker in _TC_MARKERS):
        return True
    return bool(_TENSILE_MFMA.search(kernel_name)) or GEN_GEMM.match(kernel_name) is not None


def tc_eligible(op_name: str) -> bool:
    """True for matrix products and convolutions, forward or backward (see the module docstring)."""
    return op_name in _TC_OPS or bool(_TC_BACKWARD.match(op_name))
