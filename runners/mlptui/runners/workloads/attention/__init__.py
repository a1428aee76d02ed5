"""The attention rung of the article's ladder: naive causal attention and its in-place twin, PyTorch's
scaled_dot_product_attention pinned to each backend, and FlashAttention from the Hub through `kernels`.
The registry (runners/mlptui/runners/workloads/registry.py) names the builders in `modules.py`."""
