"""The backward's pointwise pass (`geglu_backward_kernel`) launched through its compiled kernel's own
launcher. Triton's JIT dispatcher binds and specializes every argument on every call; in a host-bound
training step that is host time the fused path pays and eager's own backward does not.

Triton compiles one binary per specialization of the arguments (their dtypes, whether a pointer is 16-byte
aligned, whether an integer is 1 or a multiple of 16, and its width), so a compiled launcher is kept per
such key. As in `GateUpLauncher`, the first call at a key goes through the dispatcher, the compiled
kernel's own launch is then checked against it bit for bit, and only then is it trusted. Under CUDA-graph
capture, with a launch hook set (a profiler's), off the GPU (the interpreter) or where the check fails,
the dispatcher's launch is kept.
"""

from __future__ import annotations

from typing import Any

import torch
import triton

from mlptui.runners.fused.kernels import geglu_backward_kernel
from mlptui.runners.fused.launcher import _capturing, _launch_hooks_set, int_spec

DIRECT = True  # benchmarks turn it off to time the dispatcher's launch in the same process
# specialization key -> (run, function, packed metadata) of the checked binary, or None: the dispatcher's
_LAUNCHES: dict[tuple[Any, ...], tuple[Any, Any, Any] | None] = {}
_INT32 = 2**31


def launch_key(dh: torch.Tensor, gu: torch.Tensor, dgu: torch.Tensor, block: int,
               ints: tuple[int, ...]) -> tuple[Any, ...]:
    """What Triton compiles a separate binary for: the tensors' dtypes and 16-byte alignment, the block,
    each integer argument's specialization (1, a multiple of 16, neither) and whether it fits 32 bits."""
    return (dh.device.index, dh.dtype, gu.dtype, dgu.dtype, block,
            *(int_spec(v) for v in ints), *(-_INT32 <= v < _INT32 for v in ints),
            *(t.data_ptr() % 16 == 0 for t in (dh, gu, dgu)))


def geglu_backward(dh: torch.Tensor, gu: torch.Tensor) -> torch.Tensor:
    """[dgate | dup] ([M, 2N]) from dh [M, N] and the saved pre-activations gu = [gate | up]."""
    m, n = dh.shape
    if dh.stride(-1) != 1:
        dh = dh.contiguous()
    dgu = torch.empty_like(gu)
    if not (m and n):
        return dgu
    block = min(1024, triton.next_power_of_2(n))
    grid_n = triton.cdiv(n, block)
    ints = (n, dh.stride(0), gu.stride(0), dgu.stride(0))
    key = launch_key(dh, gu, dgu, block, ints) if DIRECT and dh.is_cuda else None
    if key is not None:
        launch = _LAUNCHES.get(key)
        if launch is not None:
            run, function, packed = launch
            run(m, grid_n, 1, torch._C._cuda_getCurrentRawStream(dh.device.index), function, packed,
                None, None, None, dh, gu, dgu, *ints, block)
            return dgu
    compiled = geglu_backward_kernel[(m, grid_n)](dh, gu, dgu, *ints, BLOCK_N=block, num_warps=4)
    if key is not None and key not in _LAUNCHES and compiled is not None and not _capturing() \
            and not _launch_hooks_set():
        _LAUNCHES[key] = _checked(compiled, (m, grid_n), dh, gu, dgu, ints, block)
    return dgu


def _checked(compiled: Any, grid: tuple[int, int], dh: torch.Tensor, gu: torch.Tensor, dgu: torch.Tensor,
             ints: tuple[int, ...], block: int) -> tuple[Any, Any, Any] | None:
    """The compiled kernel's own launcher, once it wrote what the dispatcher's launch wrote, bit for bit."""
    try:
        launch = (compiled.run, compiled.function, compiled.packed_metadata)  # `run` loads the binary first
        again = torch.full_like(dgu, float("nan"))
        launch[0](grid[0], grid[1], 1, torch._C._cuda_getCurrentRawStream(dh.device.index), launch[1], launch[2],
                  None, None, None, dh, gu, again, *ints, block)
        return launch if torch.equal(dgu, again) else None
    except Exception:  # noqa: BLE001 (a launcher this Triton builds otherwise: keep the dispatcher's)
        return None
