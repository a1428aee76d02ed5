"""Attention: what an attention step does on the GPU (kernels, masks, copies, the fused kernel's backend)."""
