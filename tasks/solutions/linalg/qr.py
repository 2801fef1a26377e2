"""Reference solution for linalg/qr: modified Gram-Schmidt, one matrix per program, in registers.

The working copy W of a (m x n, m <= 128, n <= 64) stays in registers. Step j takes column j of W,
normalises it into q_j (r_jj = its norm, positive, which is the task's sign convention), projects
q_j out of the later columns (r_jk = q_j . w_k, w_k -= r_jk q_j) and records q_j and row j of R.
Columns and rows are selected with masks and reductions. For inputs with cond(a) <= 5, MGS loses
orthogonality only at the 1e-7 level, the same as Householder.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def qr_mgs_kernel(a_ptr, q_ptr, r_ptr, M, N, stride_ab, stride_am, stride_an, stride_qb, stride_qm, stride_qn,
                  stride_rb, stride_rm, stride_rn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    mat = tl.program_id(0).to(tl.int64)
    rm = tl.arange(0, BLOCK_M)
    cn = tl.arange(0, BLOCK_N)
    rn = tl.arange(0, BLOCK_N)
    w = tl.load(a_ptr + mat * stride_ab + rm[:, None] * stride_am + cn[None, :] * stride_an,
                mask=(rm[:, None] < M) & (cn[None, :] < N), other=0.0)
    q = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    r = tl.zeros((BLOCK_N, BLOCK_N), dtype=tl.float32)
    cn_2d = cn[None, :]
    rn_2d = rn[:, None]
    for j in range(0, N):
        is_j = cn_2d == j
        col = tl.sum(tl.where(is_j, w, 0.0), axis=1)
        norm = tl.sqrt(tl.sum(col * col, axis=0))
        q_j = (col / norm)[:, None]
        r_row = tl.where(cn > j, tl.sum(q_j * w, axis=0), 0.0)
        w -= q_j * r_row[None, :]
        q = tl.where(is_j, q_j, q)
        r = tl.where(rn_2d == j, tl.where(cn == j, norm, r_row)[None, :], r)
    tl.store(q_ptr + mat * stride_qb + rm[:, None] * stride_qm + cn[None, :] * stride_qn, q,
             mask=(rm[:, None] < M) & (cn[None, :] < N))
    tl.store(r_ptr + mat * stride_rb + rn[:, None] * stride_rm + cn[None, :] * stride_rn, r,
             mask=(rn[:, None] < N) & (cn[None, :] < N))


def qr(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    batch, m, n = a.shape
    q = torch.empty((batch, m, n), dtype=torch.float32, device=a.device)
    r = torch.empty((batch, n, n), dtype=torch.float32, device=a.device)
    block_m = triton.next_power_of_2(m)
    block_n = triton.next_power_of_2(n)
    warps = 4 if block_m * block_n <= 2048 else 8
    qr_mgs_kernel[(batch,)](a, q, r, m, n, a.stride(0), a.stride(1), a.stride(2), q.stride(0), q.stride(1),
                            q.stride(2), r.stride(0), r.stride(1), r.stride(2), BLOCK_M=block_m,
                            BLOCK_N=block_n, num_warps=warps)
    return q, r
