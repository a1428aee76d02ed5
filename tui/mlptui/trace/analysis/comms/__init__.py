"""Collective communication in one trace: NCCL/RCCL kernels decoded into what moved and how fast, and the link peaks to put their bus bandwidth beside."""
