"""Reference solution for fusion/qkv-projection: one GEMM whose epilogue scatters q, k and v by head.

Output column n of x @ weight.T + bias belongs to q, k or v and to head n // D; the epilogue writes it
straight to (B, H, S, D) layout with three masked stores, so no (B, S, 3E) intermediate and no transpose
copies exist. Bench tiles (128x256x64 or 128x128x64, 8 warps) lower to wgmma on sm_90a.
tl.assume(K > 0) keeps ptxas from serialising the wgmma pipeline (its C7515 warning): without it the
accumulator's initialisation is duplicated into the zero-trip path of the K loop.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def qkv_kernel(x_ptr, w_ptr, b_ptr, q_ptr, k_ptr, v_ptr, M, N, K, S, HQ, HKV,
               HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               GROUP_M: tl.constexpr):
    tl.assume(K > 0)
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * tiles_n
    first_m = (pid // group_size) * GROUP_M
    rows_in_group = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % rows_in_group
    pid_n = (pid % group_size) // rows_in_group

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_offs = offs_m[:, None].to(tl.int64) * K + offs_k[None, :]
    w_offs = offs_n[None, :].to(tl.int64) * K + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        k_left = K - k
        a = tl.load(x_ptr + x_offs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(w_ptr + w_offs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        x_offs += BLOCK_K
        w_offs += BLOCK_K
    y = acc + tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    y = y.to(q_ptr.dtype.element_ty)

    batch = (offs_m // S).to(tl.int64)
    pos = (offs_m % S).to(tl.int64)
    head = offs_n // HEAD_DIM
    d = offs_n % HEAD_DIM
    row_ok = (offs_m < M)[:, None]
    # q: heads [0, HQ); k: [HQ, HQ + HKV); v: [HQ + HKV, HQ + 2 HKV)
    q_offs = ((batch[:, None] * HQ + head[None, :]) * S + pos[:, None]) * HEAD_DIM + d[None, :]
    tl.store(q_ptr + q_offs, y, mask=row_ok & (head < HQ)[None, :])
    hk = head - HQ
    k_offs = ((batch[:, None] * HKV + hk[None, :]) * S + pos[:, None]) * HEAD_DIM + d[None, :]
    tl.store(k_ptr + k_offs, y, mask=row_ok & ((hk >= 0) & (hk < HKV))[None, :])
    hv = head - HQ - HKV
    v_offs = ((batch[:, None] * HKV + hv[None, :]) * S + pos[:, None]) * HEAD_DIM + d[None, :]
    tl.store(v_ptr + v_offs, y, mask=row_ok & ((hv >= 0) & (hv < HKV))[None, :])


def qkv_projection(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, n_heads: int, n_kv_heads: int
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    batch, seq, e = x.shape
    rows = weight.shape[0]
    d = rows // (n_heads + 2 * n_kv_heads)
    q = torch.empty((batch, n_heads, seq, d), dtype=x.dtype, device=x.device)
    k = torch.empty((batch, n_kv_heads, seq, d), dtype=x.dtype, device=x.device)
    v = torch.empty((batch, n_kv_heads, seq, d), dtype=x.dtype, device=x.device)
    m = batch * seq
    if m * rows >= 2048 * 2048:
        bm, bn, bk, warps = 128, 256, 64, 8
    else:
        bm, bn, bk, warps = 64, 64, 32, 4
    grid = (triton.cdiv(m, bm) * triton.cdiv(rows, bn),)
    qkv_kernel[grid](x, weight, bias, q, k, v, m, rows, e, seq, n_heads, n_kv_heads, HEAD_DIM=d,
                     BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=3)
    return q, k, v
