"""Unprofiled timings: every mode of a workload, the fused MLP's sweep and the per-GPU bench reports."""
