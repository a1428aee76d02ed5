"""A warp-specialized gate/up kernel for Hopper (sm90), written in Gluon: h = gelu_tanh(x @ wg.T) * (x @ wu.T).

Why: the portable kernel (kernels.py) runs the GeGLU epilogue of a tile while its Tensor Cores sit idle,
so at the article shape it trails cuBLAS's plain GEMM of the same work (benchmarks/results/fused-mlp.md,
"Warp-specialized kernel"). Here the work of one CTA is split into partitions that run at once:

- a producer warp issues TMA loads of x, wg and wu tiles into a ring of STAGES shared-memory slots;
- two consumer warpgroups take the program's output tiles in turn (ping-pong): while one runs its
  tile's epilogue (gelu·mul, the bf16/fp16 store through shared memory and TMA), the other runs the next
  tile's wgmma main loop, so the Tensor Cores are kept busy through the epilogue.

The slots are handed over with mbarriers: `ready[s]` completes when a slot's three loads landed (TMA
transaction bytes), `empty[s]` when the consumer that read it has retired the wgmmas that read it. Both
sides count slots with one running index g (slot g % STAGES, phase (g // STAGES) & 1); the producer walks
the program's tiles in order and consumer c takes tiles c, c + 2, …, so the indices agree.

At the article shape it is correct in both forms and slower than the portable kernel
(benchmarks/results/fused-mlp.md, "Warp-specialized kernel"), so nothing routes to it yet. A third form,
`ordered`, shares one ring between the consumers and lets their main loops take turns, as a ping-pong
kernel must for one ring to be safe: it compiles for sm90 and has not yet run on a GPU.

Only Hopper runs it (Gluon's warp specialization and wgmma); Ampere, Blackwell and AMD keep the portable
kernel. Imports Gluon at module import: import this module only where capability 9.x was checked.
"""

from __future__ import annotations

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor


@gluon.jit
def _tile(t, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    """Grouped order: GROUP_M row blocks share each column block while it sits in L2."""
    in_group = GROUP_M * num_pid_n
    first_m = (t // in_group) * GROUP_M
    size_m = gl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (t % in_group) % size_m
    pid_n = (t % in_group) // size_m
    return pid_m, pid_n


@gluon.jit
def _produce(x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N, K, GROUP_M,
             RINGS: gl.constexpr):
    # values handed to a partition arrive as runtime values: the tile shape is read off the descriptors
    BM: gl.constexpr = x_desc.block_type.shape[0]
    BK: gl.constexpr = x_desc.block_type.shape[1]
    BN: gl.constexpr = wg_desc.block_type.shape[0]
    RING: gl.constexpr = a_bufs.type.shape[0] // RINGS
    NUM_PROGRAMS = gl.num_programs(0)
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN)
    ksteps = gl.cdiv(K, BK)
    nbytes: gl.constexpr = x_desc.block_type.nbytes + wg_desc.block_type.nbytes + wu_desc.block_type.nbytes
    i = 0  # the tile's place in this program's sequence: ring i % RINGS, that ring's (i // RINGS)-th tile
    for t in range(gl.program_id(0), num_pid_m * num_pid_n, NUM_PROGRAMS):
        pid_m, pid_n = _tile(t, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BM
        off_n = pid_n * BN
        first = (i // RINGS) * ksteps
        for kk in range(ksteps):
            c = first + kk
            s = (i % RINGS) * RING + c % RING
            # a fresh mbarrier counts as having completed phase 1, so the first round passes at once
            mbarrier.wait(empty.index(s), ((c // RING) & 1) ^ 1)
            bar = ready.index(s)
            mbarrier.expect(bar, nbytes)
            tma.async_copy_global_to_shared(x_desc, [off_m, kk * BK], bar, a_bufs.index(s))
            tma.async_copy_global_to_shared(wg_desc, [off_n, kk * BK], bar, g_bufs.index(s))
            tma.async_copy_global_to_shared(wu_desc, [off_n, kk * BK], bar, u_bufs.index(s))
        i += 1


@gluon.jit
def _produce_one_ring(x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N, K,
                      GROUP_M):
    _produce(x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N, K, GROUP_M, 1)


@gluon.jit
def _produce_two_rings(x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N, K,
                       GROUP_M):
    _produce(x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N, K, GROUP_M, 2)


@gluon.jit
def _consume(x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N, K, GROUP_M,
             CONSUMER: gl.constexpr, CONSUMERS: gl.constexpr = 2, ORDERED: gl.constexpr = False):
    BM: gl.constexpr = x_desc.block_type.shape[0]
    BK: gl.constexpr = x_desc.block_type.shape[1]
    BN: gl.constexpr = wg_desc.block_type.shape[0]
    # ORDERED: one ring shared by both consumers, whose main loops take turns; else a ring per consumer
    RING: gl.constexpr = a_bufs.type.shape[0] if ORDERED else a_bufs.type.shape[0] // CONSUMERS
    BASE: gl.constexpr = 0 if ORDERED else CONSUMER * RING
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, BN, 256 // x_desc.dtype.primitive_bitwidth])
    NUM_PROGRAMS = gl.num_programs(0)
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN)
    ksteps = gl.cdiv(K, BK)
    h_smem = h_bufs.index(CONSUMER)
    j = 0  # this consumer's j-th tile: its ring's slots count on from j * ksteps
    for t in range(gl.program_id(0) + CONSUMER * NUM_PROGRAMS, num_pid_m * num_pid_n, CONSUMERS * NUM_PROGRAMS):
        pid_m, pid_n = _tile(t, num_pid_m, num_pid_n, GROUP_M)
        acc_g = gl.zeros([BM, BN], gl.float32, acc_layout)
        acc_u = gl.zeros([BM, BN], gl.float32, acc_layout)
        if ORDERED:
            # the producer fills the shared ring in the program's tile order; this is its tile 2j + CONSUMER.
            # Wait until the other consumer's main loop before this tile has finished: then every slot waited
            # on lies within one lap of the ring (a fresh mbarrier counts as having completed phase 1, so
            # consumer 0's first wait passes at once)
            first = (CONSUMERS * j + CONSUMER) * ksteps
            mbarrier.wait(turn.index(CONSUMER), (j & 1) ^ (1 - CONSUMER))
        else:
            first = j * ksteps
        for kk in range(ksteps):
            c = first + kk
            s = BASE + c % RING
            mbarrier.wait(ready.index(s), (c // RING) & 1)
            acc_g = warpgroup_mma(a_bufs.index(s), g_bufs.index(s).permute((1, 0)), acc_g, is_async=True)
            acc_u = warpgroup_mma(a_bufs.index(s), u_bufs.index(s).permute((1, 0)), acc_u, is_async=True)
            # this step's two wgmmas stay in flight; the previous step's are retired: free its slot
            acc_g, acc_u = warpgroup_mma_wait(num_outstanding=2, deps=(acc_g, acc_u))
            mbarrier.arrive(empty.index(BASE + (c + RING - 1) % RING), count=1, pred=kk > 0)
        acc_g, acc_u = warpgroup_mma_wait(num_outstanding=0, deps=(acc_g, acc_u))
        mbarrier.arrive(empty.index(BASE + (first + ksteps - 1) % RING), count=1)
        if ORDERED:  # the other consumer's main loop may start: this epilogue runs under it
            mbarrier.arrive(turn.index(1 - CONSUMER), count=1)

        # gelu_tanh(g) * u = g * u * sigmoid(2 sqrt(2/pi) (g + 0.044715 g^3)), one exp2 and one division
        z = acc_g * (1.5957691216057308 + 0.07135481627159072 * acc_g * acc_g)
        h = gl.fdiv(acc_g * acc_u, 1.0 + gl.exp2(z * -1.4426950408889634)).to(h_desc.dtype)
        tma.store_wait(0)  # this consumer's previous tile has left h_smem
        h_smem.store(h)
        fence_async_shared()
        tma.async_copy_shared_to_global(h_desc, [pid_m * BM, pid_n * BN], h_smem)
        j += 1
    tma.store_wait(0)


@gluon.jit
def _consume_even(x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N, K,
                  GROUP_M):
    _consume(x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N, K, GROUP_M,
             0)


@gluon.jit
def _consume_odd(x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N, K,
                 GROUP_M):
    _consume(x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N, K, GROUP_M,
             1)


@gluon.jit
def _consume_even_ordered(x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N,
                          K, GROUP_M):
    _consume(x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N, K, GROUP_M,
             0, 2, True)


@gluon.jit
def _consume_odd_ordered(x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N,
                         K, GROUP_M):
    _consume(x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N, K, GROUP_M,
             1, 2, True)


@gluon.jit
def _consume_all(x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N, K,
                 GROUP_M):
    _consume(x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N, K, GROUP_M,
             0, 1)


@gluon.jit
def gateup_ws_kernel(x_desc, wg_desc, wu_desc, h_desc, M, N, K, GROUP_M, STAGES: gl.constexpr,
                     PRODUCER_REGS: gl.constexpr, CONSUMER_REGS: gl.constexpr, PINGPONG: gl.constexpr,
                     ORDERED: gl.constexpr = False):
    # STAGES slots per consumer: each consumer has a ring of its own. With one ring shared, the second
    # consumer waits on a slot a whole tile (more than STAGES k-steps) ahead of the first, where an mbarrier's
    # phase parity cannot tell the phase it wants from one two laps earlier: it read stale slots and freed
    # slots still in use (the first ping-pong version's fault). ORDERED keeps one shared ring of STAGES slots
    # and lets the consumers' main loops take turns (`turn`), so no consumer waits a tile ahead of the other
    SLOTS: gl.constexpr = STAGES * (2 if PINGPONG and not ORDERED else 1)
    a_bufs = gl.allocate_shared_memory(x_desc.dtype, [SLOTS] + x_desc.block_type.shape, x_desc.layout)
    g_bufs = gl.allocate_shared_memory(wg_desc.dtype, [SLOTS] + wg_desc.block_type.shape, wg_desc.layout)
    u_bufs = gl.allocate_shared_memory(wu_desc.dtype, [SLOTS] + wu_desc.block_type.shape, wu_desc.layout)
    h_bufs = gl.allocate_shared_memory(h_desc.dtype, [2] + h_desc.block_type.shape, h_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [SLOTS, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [SLOTS, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(SLOTS):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    for s in gl.static_range(2):
        mbarrier.init(turn.index(s), count=1)
    args = (x_desc, wg_desc, wu_desc, h_desc, ready, empty, turn, a_bufs, g_bufs, u_bufs, h_bufs, M, N, K, GROUP_M)
    if PINGPONG and ORDERED:  # one ring, filled in the program's tile order
        gl.warp_specialize([(_consume_even_ordered, args), (_consume_odd_ordered, args), (_produce_one_ring, args)],
                           [4, 4], [CONSUMER_REGS, PRODUCER_REGS])
    elif PINGPONG:
        # the producer gets a whole warpgroup: with one warp, the compiler may place the second consumer's
        # four warps across a warpgroup boundary, where wgmma cannot run
        gl.warp_specialize([(_consume_even, args), (_consume_odd, args), (_produce_two_rings, args)],
                           [4, 4], [CONSUMER_REGS, PRODUCER_REGS])
    else:  # one consumer warpgroup: the producer runs ahead, the epilogue does not overlap the main loop
        gl.warp_specialize([(_consume_all, args), (_produce_one_ring, args)], [1], [PRODUCER_REGS])


GL_DTYPES = {torch.bfloat16: gl.bfloat16, torch.float16: gl.float16}


def gateup_ws(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, *, bm: int = 128, bn: int = 64,
              bk: int = 64, stages: int | None = None, group_m: int = 8, producer_regs: int = 40,
              consumer_regs: int = 232, maxnreg: int | None = 168, pingpong: bool = True,
              ordered: bool = False, out: torch.Tensor | None = None) -> torch.Tensor:
    """h [M, N] for x [M, K] and weights [N, K] (bf16 or fp16, unit last stride, 16-byte aligned rows).
    `stages`: shared-memory slots per consumer (default 5 for one consumer, 3 each for ping-pong), or in all
    for `ordered` ping-pong (one ring shared by consumers whose main loops take turns; default 6)."""
    stages = stages if stages is not None else (6 if pingpong and ordered else 3 if pingpong else 5)
    m, k = x.shape
    n = w_gate.shape[0]
    h = out if out is not None else torch.empty((m, n), device=x.device, dtype=x.dtype)
    dt = GL_DTYPES[x.dtype]
    x_desc = TensorDescriptor.from_tensor(x, [bm, bk], gl.NVMMASharedLayout.get_default_for([bm, bk], dt))
    w_layout = gl.NVMMASharedLayout.get_default_for([bn, bk], dt)
    wg_desc = TensorDescriptor.from_tensor(w_gate, [bn, bk], w_layout)
    wu_desc = TensorDescriptor.from_tensor(w_up, [bn, bk], w_layout)
    h_desc = TensorDescriptor.from_tensor(h, [bm, bn], gl.NVMMASharedLayout.get_default_for([bm, bn], dt))
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    programs = max(1, min(sms, triton.cdiv(m, bm) * triton.cdiv(n, bn)))
    extra = {} if maxnreg is None else {"maxnreg": maxnreg}
    if not pingpong and maxnreg is not None:
        extra["maxnreg"] = 232  # 4 consumer warps + 1 producer warp (two warpgroups)
    gateup_ws_kernel[(programs,)](x_desc, wg_desc, wu_desc, h_desc, m, n, k, group_m, stages, producer_regs,
                                  consumer_regs, pingpong, pingpong and ordered, num_warps=4, **extra)
    return h
