"""Kernels and occupancy: a kernel's inputs and decoded name, its per-launch figures (grid, block, occupancy), the kernels table, Kineto's kernel args, the GPU specs and roofline, Tensor-Core use."""
