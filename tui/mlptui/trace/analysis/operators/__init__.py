"""Operators and modules: the operator table, the module tree, and the CPU dispatch paths with the kernels they launched."""
