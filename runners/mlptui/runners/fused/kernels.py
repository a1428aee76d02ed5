"""The Triton kernels of the fused GeGLU MLP.

`fused_geglu_gateup_gemm_kernel` reads each x tile once, multiplies it by the paired gate and up weight
tiles into fp32 accumulators, applies gelu_tanh(gate) * up in registers and writes only
h = [M, hidden] (and, for training, the gate/up pre-activations). Two load paths share the tile loop
and the epilogue: tensor descriptors (`tl.make_tensor_descriptor`, TMA on Hopper, for 16-byte aligned
rows) and plain masked pointer loads (any strides, and what the CPU interpreter runs in tests). The grid
is persistent: one program per SM walks the output tiles.

`geglu_backward_kernel` is the backward's one pointwise pass: from dh and the saved pre-activations it
recomputes gelu_tanh(gate) and writes d gate and d up side by side, ready for two cuBLAS GEMMs.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def geglu_tanh(gate, up):
    """gelu(gate, approximate="tanh") * up, in fp32.

    gelu_tanh(g) = g * sigmoid(2*sqrt(2/pi) * (g + 0.044715 g^3)) and sigmoid(z) = 1 / (1 + 2^(-z log2 e)):
    one exp2 and one fast division per element. Constants: 2*sqrt(2/pi) = 1.5957691216057308,
    times 0.044715 = 0.07135481627159072, log2(e) = 1.4426950408889634.
    """
    g = gate.to(tl.float32)
    z = g * (1.5957691216057308 + 0.07135481627159072 * (g * g))
    return tl.fdiv(g * up.to(tl.float32), 1.0 + tl.exp2(z * -1.4426950408889634))


@triton.jit
def _dot_wt(a, w, acc, UPCAST: tl.constexpr):
    """acc + a @ w.T. UPCAST is set only under TRITON_INTERPRET, whose numpy dot has no bf16."""
    if UPCAST:
        acc = tl.dot(a.to(tl.float32), w.to(tl.float32).T, acc)
    else:
        acc = tl.dot(a, w.T, acc)
    return acc


@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    # Grouped order: GROUP_M row-blocks share each weight column block while it is hot in L2.
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


# M is not specialized (no "M % 16 == 0" / "M == 1" variants): one compiled kernel serves every row
# count of a bucket, so the launcher can cache it and call it directly (launcher.py).
@triton.jit(do_not_specialize=["M"])
def fused_geglu_gateup_gemm_kernel(
    x_ptr, wg_ptr, wu_ptr, h_ptr, gu_ptr,
    M, N, K,
    stride_xm, stride_wg, stride_wu, stride_hm, stride_gum,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr,
    USE_TMA: tl.constexpr, INTERLEAVED: tl.constexpr, FLATTEN: tl.constexpr, STORE_GU: tl.constexpr = False,
    UPCAST: tl.constexpr = False,
):
    """h[M, N] = gelu_tanh(x @ wg.T) * (x @ wu.T); x [M, K], wg/wu [N, K], unit stride in the last dim.

    STORE_GU (training): the pre-activations are written too, gate to gu[:, :N] and up to gu[:, N:]
    ([M, 2N]), for the backward (geglu_backward_kernel recomputes the GeGLU from them).

    INTERLEAVED: wg_ptr holds both weights as [2 * cdiv(N, BLOCK_N) * BLOCK_N, K], alternating BLOCK_N
    gate rows and BLOCK_N up rows (interleave_gate_up), so each k-step is one [BLOCK_M, 2*BLOCK_N] dot.
    """
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    out_dtype = h_ptr.dtype.element_ty

    if USE_TMA:
        # Out-of-range rows and columns read as zero and are not written: no masks needed.
        x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[stride_xm, 1],
                                           block_shape=[BLOCK_M, BLOCK_K])
        h_desc = tl.make_tensor_descriptor(h_ptr, shape=[M, N], strides=[stride_hm, 1],
                                           block_shape=[BLOCK_M, BLOCK_N])
        if INTERLEAVED:
            w_desc = tl.make_tensor_descriptor(wg_ptr, shape=[2 * num_pid_n * BLOCK_N, K],
                                               strides=[stride_wg, 1], block_shape=[2 * BLOCK_N, BLOCK_K])
        else:
            wg_desc = tl.make_tensor_descriptor(wg_ptr, shape=[N, K], strides=[stride_wg, 1],
                                                block_shape=[BLOCK_N, BLOCK_K])
            wu_desc = tl.make_tensor_descriptor(wu_ptr, shape=[N, K], strides=[stride_wu, 1],
                                                block_shape=[BLOCK_N, BLOCK_K])

    # The epilogue recomputes its tile's coordinates from its own counter so that, with FLATTEN, the
    # loads of the next tile do not wait on the stores of this one.
    tile_id_c = start_pid - NUM_PROGRAMS
    for tile_id in tl.range(start_pid, num_tiles, NUM_PROGRAMS, flatten=FLATTEN):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        rk = tl.arange(0, BLOCK_K)
        # Pointer loads: rows past M wrap onto valid rows (their results are never stored), so only
        # the K tail needs a mask.
        rm = (off_m + tl.arange(0, BLOCK_M)) % M
        if INTERLEAVED:
            acc = tl.zeros((BLOCK_M, 2 * BLOCK_N), dtype=tl.float32)
            if USE_TMA:
                for ki in range(k_tiles):
                    a = x_desc.load([off_m, ki * BLOCK_K])
                    b = w_desc.load([2 * off_n, ki * BLOCK_K])
                    acc = _dot_wt(a, b, acc, UPCAST)
            else:
                rw = 2 * off_n + tl.arange(0, 2 * BLOCK_N)  # the interleaved weight is padded: in range
                x_ptrs = x_ptr + rm[:, None] * stride_xm + rk[None, :]
                w_ptrs = wg_ptr + rw[:, None] * stride_wg + rk[None, :]
                for ki in range(k_tiles):
                    k_mask = rk[None, :] < K - ki * BLOCK_K
                    a = tl.load(x_ptrs, mask=k_mask, other=0.0)
                    b = tl.load(w_ptrs, mask=k_mask, other=0.0)
                    acc = _dot_wt(a, b, acc, UPCAST)
                    x_ptrs += BLOCK_K
                    w_ptrs += BLOCK_K
            # columns [0, BLOCK_N) are gate, [BLOCK_N, 2*BLOCK_N) up; each thread holds both halves
            acc_g, acc_u = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N)), (0, 2, 1)))
        else:
            acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            if USE_TMA:
                for ki in range(k_tiles):
                    a = x_desc.load([off_m, ki * BLOCK_K])
                    bg = wg_desc.load([off_n, ki * BLOCK_K])
                    bu = wu_desc.load([off_n, ki * BLOCK_K])
                    acc_g = _dot_wt(a, bg, acc_g, UPCAST)
                    acc_u = _dot_wt(a, bu, acc_u, UPCAST)
            else:
                rn = (off_n + tl.arange(0, BLOCK_N)) % N
                x_ptrs = x_ptr + rm[:, None] * stride_xm + rk[None, :]
                wg_ptrs = wg_ptr + rn[:, None] * stride_wg + rk[None, :]
                wu_ptrs = wu_ptr + rn[:, None] * stride_wu + rk[None, :]
                for ki in range(k_tiles):
                    k_mask = rk[None, :] < K - ki * BLOCK_K
                    a = tl.load(x_ptrs, mask=k_mask, other=0.0)
                    bg = tl.load(wg_ptrs, mask=k_mask, other=0.0)
                    bu = tl.load(wu_ptrs, mask=k_mask, other=0.0)
                    acc_g = _dot_wt(a, bg, acc_g, UPCAST)
                    acc_u = _dot_wt(a, bu, acc_u, UPCAST)
                    x_ptrs += BLOCK_K
                    wg_ptrs += BLOCK_K
                    wu_ptrs += BLOCK_K

        tile_id_c += NUM_PROGRAMS
        pid_m_c, pid_n_c = _tile_coords(tile_id_c, num_pid_m, num_pid_n, GROUP_M)
        if STORE_GU:
            # round the pre-activations once: h is computed from exactly what the backward reads
            acc_g = acc_g.to(out_dtype)
            acc_u = acc_u.to(out_dtype)
            sm = pid_m_c * BLOCK_M + tl.arange(0, BLOCK_M)
            sn = pid_n_c * BLOCK_N + tl.arange(0, BLOCK_N)
            s_mask = (sm[:, None] < M) & (sn[None, :] < N)
            g_ptrs = gu_ptr + sm[:, None] * stride_gum + sn[None, :]
            tl.store(g_ptrs, acc_g, mask=s_mask)
            tl.store(g_ptrs + N, acc_u, mask=s_mask)
        h = geglu_tanh(acc_g, acc_u).to(out_dtype)
        if USE_TMA:
            h_desc.store([pid_m_c * BLOCK_M, pid_n_c * BLOCK_N], h)
        else:
            cm = pid_m_c * BLOCK_M + tl.arange(0, BLOCK_M)
            cn = pid_n_c * BLOCK_N + tl.arange(0, BLOCK_N)
            h_ptrs = h_ptr + cm[:, None] * stride_hm + cn[None, :]
            tl.store(h_ptrs, h, mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def geglu_backward_kernel(dh_ptr, gu_ptr, dgu_ptr, N, stride_dh, stride_gu, stride_dgu, BLOCK_N: tl.constexpr):
    """One row block of the GeGLU backward: h = gelu_tanh(g) * u, so
    dg = dh * u * gelu_tanh'(g) and du = dh * gelu_tanh(g), in fp32, written to dgu[:, :N] and dgu[:, N:].

    With s = sigmoid(z), z = 2*sqrt(2/pi) * (g + 0.044715 g^3): gelu_tanh(g) = g*s and
    gelu_tanh'(g) = s + g*s*(1-s) * dz/dg, dz/dg = 1.5957691216057308 + 0.21406444881477216 g^2.
    """
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < N
    g = tl.load(gu_ptr + row * stride_gu + cols, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(gu_ptr + row * stride_gu + N + cols, mask=mask, other=0.0).to(tl.float32)
    dh = tl.load(dh_ptr + row * stride_dh + cols, mask=mask, other=0.0).to(tl.float32)
    z = g * (1.5957691216057308 + 0.07135481627159072 * (g * g))
    s = tl.fdiv(1.0, 1.0 + tl.exp2(z * -1.4426950408889634))
    dgelu = s + g * s * (1.0 - s) * (1.5957691216057308 + 0.21406444881477216 * (g * g))
    out_ty = dgu_ptr.dtype.element_ty
    tl.store(dgu_ptr + row * stride_dgu + cols, (dh * u * dgelu).to(out_ty), mask=mask)
    tl.store(dgu_ptr + row * stride_dgu + N + cols, (dh * g * s).to(out_ty), mask=mask)
