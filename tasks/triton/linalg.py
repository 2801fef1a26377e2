"""Linear algebra beyond the plain GEMM: batched products with broadcasting and scaling, the small
dense factorizations and solves that run batched on GPUs (triangular solve, Cholesky, QR, SPD
inverse), BLAS-2 shapes (transposed matrix-vector, outer product), trace, SYRK and Gram matrices.

Factorization inputs are built well conditioned (cond(A) below about 8; see each builder), so a
backward-stable float32 algorithm lands near 1e-7 relative error and the tolerances below leave
two orders of magnitude for other orders of operations, not for unstable algorithms.
"""

from __future__ import annotations

import math

import torch

from ..registry import register
from ..spec import Task, Tolerance, dtype_of, elem_size

GEMM_TOLERANCES = {
    "float16": Tolerance(1e-2, 1e-2, 2e-3, "fp32 accumulation is near exact; fp16 output rounding dominates"),
    "bfloat16": Tolerance(2e-2, 2e-2, 1e-2, "bf16 output rounding (4e-3 relative) dominates"),
    "float32": Tolerance(
        1e-3, 1e-4, 1e-5,
        "IEEE fp32 FMAs: ~3e-7 relative L2 at K=8192; TF32 inputs (10-bit mantissa, ~5e-4) fail",
    ),
}
FACTOR_TOLERANCE = Tolerance(
    1e-5, 1e-4, 1e-5,
    "cond(A) <= 8, n <= 128: backward-stable fp32 algorithms give ~1e-7 relative error; O(1) entries",
)
BLAS2_TOLERANCES = {
    "float32": Tolerance(1e-4, 1e-4, 1e-5, "fp32 dot products of length up to 16K; reordering costs ~1e-7"),
    "float16": Tolerance(1e-2, 1e-2, 2e-3, "fp32 accumulation; fp16 output rounding dominates"),
    "bfloat16": Tolerance(2e-2, 2e-2, 1e-2, "fp32 accumulation; bf16 output rounding dominates"),
}


def _row_major(t: torch.Tensor) -> torch.Tensor:
    """A row-major copy: LAPACK-backed ops return column-major results, whose size-1 dimensions keep
    odd strides even after .contiguous(), which byte views of the output (digests) reject."""
    return t.clone(memory_format=torch.contiguous_format)


def _spd(case, s) -> torch.Tensor:
    """G G^T / n + I with G from the sampler: eigenvalues in [1, ~5], so cond(A) <= ~6."""
    b, n = case["b"], case["n"]
    g = s.tensor((b, n, n), torch.float64)
    eye = torch.eye(n, dtype=torch.float64, device=g.device)
    return (g @ g.transpose(-1, -2) / n + eye).to(torch.float32)


# ---------------------------------------------------------------------------------------------
# Batched products.

def _bcast_case(b: int, h: int, m: int, n: int, k: int, dtype: str) -> dict[str, object]:
    return {"b": b, "h": h, "m": m, "n": n, "k": k, "dtype": dtype}


register(Task(
    id="linalg/bmm-broadcast",
    entrypoint="bmm_broadcast",
    signature="def bmm_broadcast(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor",
    description="""
Batched matrix product with a broadcast operand, as torch.matmul(a, b): a is a contiguous
(B, H, M, K) tensor and b a contiguous (B, 1, K, N) tensor shared by the H matrices of its batch
entry (as keys shared by all query heads in multi-query attention); out[i, h] = a[i, h] @ b[i, 0].
a and b are both float16 or both bfloat16; accumulate in float32 and return a new contiguous
(B, H, M, N) tensor of the input dtype. Read b in place: do not expand it into H copies.
M, N and K are often not multiples of 16.
""",
    reference=lambda a, b: torch.matmul(a, b),
    make_inputs=lambda case, s: {
        "a": s.tensor((case["b"], case["h"], case["m"], case["k"]), case["dtype"]),
        "b": s.tensor((case["b"], 1, case["k"], case["n"]), case["dtype"]),
    },
    shapes={
        "dev": [
            _bcast_case(1, 3, 32, 40, 48, "float16"),
            _bcast_case(2, 2, 50, 30, 70, "float16"),
            _bcast_case(1, 2, 33, 17, 20, "bfloat16"),
        ],
        "heldout": [
            _bcast_case(2, 3, 65, 33, 100, "float16"),
            _bcast_case(1, 4, 1, 64, 80, "float16"),
            _bcast_case(2, 2, 40, 48, 33, "bfloat16"),
            _bcast_case(1, 2, 128, 128, 96, "float16"),  # whole tiles: a kernel's unmasked path runs here too
        ],
        "bench": [
            _bcast_case(4, 32, 2048, 2048, 128, "bfloat16"),
            _bcast_case(2, 8, 4096, 4096, 1024, "float16"),
        ],
    },
    dtypes=("float16", "bfloat16"),
    tolerances=GEMM_TOLERANCES,
    flops=lambda c: 2 * c["b"] * c["h"] * c["m"] * c["n"] * c["k"],
    bytes=lambda c: (c["b"] * c["h"] * (c["m"] * c["k"] + c["m"] * c["n"]) + c["b"] * c["k"] * c["n"])
    * elem_size(c["dtype"]),
    distributions=("normal", "uniform"),
    vendor=lambda a, b: torch.matmul(a, b),
    vendor_name="cuBLAS (torch.matmul with broadcasting)",
))


def _baddbmm_case(b: int, m: int, n: int, k: int, dtype: str, alpha: float, beta: float) -> dict[str, object]:
    return {"b": b, "m": m, "n": n, "k": k, "dtype": dtype, "alpha": alpha, "beta": beta}


register(Task(
    id="linalg/baddbmm",
    entrypoint="baddbmm",
    signature=(
        "def baddbmm(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor, beta: float = 1.0, "
        "alpha: float = 1.0) -> torch.Tensor"
    ),
    description="""
Batched matrix product with scaling and accumulation, as torch.baddbmm(c, a, b, beta=beta, alpha=alpha):
out[i] = beta * c[i] + alpha * (a[i] @ b[i]), with contiguous a (B, M, K), b (B, K, N) and c (B, M, N)
of one dtype: float16, bfloat16 or float32. Accumulate in float32 and apply alpha and beta in float32
before the single rounding to the output dtype; return a new contiguous (B, M, N) tensor of the input
dtype and leave c unchanged. float32 inputs need IEEE float32 products (TF32 fails the tolerance; in
Triton use tl.dot(..., input_precision="ieee")). beta may be 0 (then c contributes nothing) and alpha
negative. M, N and K are often not multiples of 16.
""",
    reference=lambda c, a, b, beta=1.0, alpha=1.0: torch.baddbmm(c, a, b, beta=beta, alpha=alpha),
    make_inputs=lambda case, s: {
        "c": s.tensor((case["b"], case["m"], case["n"]), case["dtype"]),
        "a": s.tensor((case["b"], case["m"], case["k"]), case["dtype"]),
        "b": s.tensor((case["b"], case["k"], case["n"]), case["dtype"]),
        "beta": case["beta"],
        "alpha": case["alpha"],
    },
    shapes={
        "dev": [
            _baddbmm_case(2, 32, 48, 40, "float16", 0.5, 2.0),
            _baddbmm_case(2, 50, 30, 70, "float32", 1.5, -1.0),
            _baddbmm_case(2, 33, 17, 20, "bfloat16", 1.0, 1.0),
        ],
        "heldout": [
            _baddbmm_case(3, 65, 33, 100, "float16", -0.75, 0.5),
            _baddbmm_case(1, 1, 64, 80, "float32", 2.0, 1.0),
            _baddbmm_case(2, 40, 48, 33, "float32", 1.0, 0.0),
            _baddbmm_case(2, 30, 20, 50, "bfloat16", 0.25, 3.0),
        ],
        "bench": [
            _baddbmm_case(16, 2048, 2048, 2048, "bfloat16", 0.5, 1.0),
            _baddbmm_case(8, 2048, 2048, 2048, "float32", 1.0, 1.0),
        ],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances=GEMM_TOLERANCES,
    flops=lambda c: c["b"] * (2 * c["m"] * c["n"] * c["k"] + 3 * c["m"] * c["n"]),
    bytes=lambda c: c["b"] * (c["m"] * c["k"] + c["k"] * c["n"] + 2 * c["m"] * c["n"])
    * elem_size(c["dtype"]),
    distributions=("normal", "uniform"),
    vendor=lambda c, a, b, beta=1.0, alpha=1.0: torch.baddbmm(c, a, b, beta=beta, alpha=alpha),
    vendor_name="cuBLAS (torch.baddbmm)",
))


# ---------------------------------------------------------------------------------------------
# Small dense factorizations and solves, batched: one matrix (or one panel) per program.

def _triangular_inputs(case, s):
    """Lower triangle: N(0, 0.25/n) off the diagonal, U(1, 2) on it (cond <= ~3, also with a unit
    diagonal). The diagonal of a unit case and the whole upper triangle hold values that must be
    ignored, so a kernel that reads them gives a wrong answer."""
    b, n, k = case["b"], case["n"], case["k"]
    off = s.normal((b, n, n), torch.float32, std=0.5 / math.sqrt(n))
    diag = s.uniform((b, n), 1.0, 2.0)
    upper = s.normal((b, n, n), torch.float32)
    lower = torch.tril(off, -1) + torch.diag_embed(diag) + torch.triu(upper, 1)
    return {"a": lower, "b": s.tensor((b, n, k), torch.float32), "unitriangular": case["unit"]}


def _tri_case(b: int, n: int, k: int, unit: bool) -> dict[str, object]:
    return {"b": b, "n": n, "k": k, "unit": unit, "dtype": "float32"}


register(Task(
    id="linalg/solve-triangular",
    entrypoint="solve_triangular",
    signature=(
        "def solve_triangular(a: torch.Tensor, b: torch.Tensor, unitriangular: bool = False) -> torch.Tensor"
    ),
    description="""
Batched lower-triangular solve, as torch.linalg.solve_triangular(a, b, upper=False,
unitriangular=unitriangular): find X with L[i] @ X[i] = b[i], where L[i] is the lower triangle of
a[i]. a is a contiguous float32 (B, n, n) tensor, b a contiguous float32 (B, n, k) tensor of
right-hand sides, 1 <= n <= 128. Only the lower triangle of a may be read: its upper triangle holds
unrelated values. With unitriangular=True the diagonal is taken as all ones and the stored diagonal
(which is not 1) must be ignored. Return a new contiguous float32 (B, n, k) tensor. Forward
substitution, row by row (x_r = (b_r - sum_{j<r} L[r, j] x_j) / L[r, r]) or in blocks, is stable for
these well-conditioned matrices (cond <= ~3).
""",
    reference=lambda a, b, unitriangular=False: _row_major(torch.linalg.solve_triangular(
        a, b, upper=False, unitriangular=unitriangular)),
    make_inputs=_triangular_inputs,
    shapes={
        "dev": [
            _tri_case(2, 16, 8, False),
            _tri_case(2, 40, 20, True),
            _tri_case(1, 64, 33, False),
        ],
        "heldout": [
            _tri_case(1, 1, 5, False),
            _tri_case(1, 100, 17, True),
            _tri_case(2, 33, 1, False),
            _tri_case(1, 128, 20, True),
        ],
        "bench": [
            _tri_case(16384, 64, 64, False),
            _tri_case(4096, 128, 128, True),
        ],
    },
    dtypes=("float32",),
    tolerances={"float32": FACTOR_TOLERANCE},
    flops=lambda c: c["b"] * c["k"] * (c["n"] * (c["n"] - 1) + (0 if c["unit"] else c["n"])),
    bytes=lambda c: 4 * c["b"] * (c["n"] * (c["n"] + 1) // 2 + 2 * c["n"] * c["k"]),
    distributions=("normal", "uniform"),
    vendor=lambda a, b, unitriangular=False: torch.linalg.solve_triangular(
        a, b, upper=False, unitriangular=unitriangular),
    vendor_name="cuBLAS batched TRSM (torch.linalg.solve_triangular)",
))


def _factor_case(b: int, n: int) -> dict[str, object]:
    return {"b": b, "n": n, "dtype": "float32"}


register(Task(
    id="linalg/cholesky",
    entrypoint="cholesky",
    signature="def cholesky(a: torch.Tensor) -> torch.Tensor",
    description="""
Batched Cholesky factorization of small symmetric positive-definite matrices, as
torch.linalg.cholesky(a): a is a contiguous float32 (B, n, n) tensor of SPD matrices, 1 <= n <= 64,
exactly symmetric; return a new contiguous float32 (B, n, n) tensor L, lower triangular with a
positive diagonal and exact zeros above it, such that L[i] @ L[i]^T = a[i]. B is large (thousands of
matrices at bench sizes) and each matrix fits in one program's registers or shared memory.
The matrices are well conditioned (eigenvalues in [1, ~5]).
""",
    reference=lambda a: _row_major(torch.linalg.cholesky(a)),
    make_inputs=lambda case, s: {"a": _spd(case, s)},
    shapes={
        "dev": [_factor_case(2, 8), _factor_case(1, 33), _factor_case(1, 64)],
        "heldout": [_factor_case(3, 1), _factor_case(1, 17), _factor_case(2, 50)],
        "bench": [_factor_case(65536, 32), _factor_case(16384, 64)],
    },
    dtypes=("float32",),
    tolerances={"float32": FACTOR_TOLERANCE},
    flops=lambda c: c["b"] * c["n"] * (c["n"] + 1) * (2 * c["n"] + 1) // 6,
    bytes=lambda c: 4 * c["b"] * (c["n"] * (c["n"] + 1) // 2 + c["n"] * c["n"]),
    distributions=("normal", "uniform"),
    vendor=lambda a: torch.linalg.cholesky(a),
    vendor_name="cuSOLVER batched potrf (torch.linalg.cholesky)",
))


def qr_reference(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Reduced QR with the sign convention diag(R) > 0, which makes it unique for full-rank a."""
    q, r = torch.linalg.qr(a, mode="reduced")
    sign = torch.where(torch.diagonal(r, dim1=-2, dim2=-1) < 0, -1.0, 1.0).to(r.dtype)
    return _row_major(q * sign.unsqueeze(-2)), _row_major(r * sign.unsqueeze(-1))


def _qr_inputs(case, s):
    """3 I + G / sqrt(m): singular values in [1, 5], so cond(A) <= 5."""
    b, m, n = case["b"], case["m"], case["n"]
    g = s.tensor((b, m, n), torch.float32, scale=1.0 / math.sqrt(m))
    return {"a": g + 3.0 * torch.eye(m, n, dtype=torch.float32, device=g.device)}


def _qr_case(b: int, m: int, n: int) -> dict[str, object]:
    return {"b": b, "m": m, "n": n, "dtype": "float32"}


register(Task(
    id="linalg/qr",
    entrypoint="qr",
    signature="def qr(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]",
    description="""
Batched reduced QR factorization of small tall matrices: a is a contiguous float32 (B, m, n) tensor
with n <= m <= 128 and n <= 64; return (q, r), new contiguous float32 tensors of shapes (B, m, n) and
(B, n, n), with q[i] having orthonormal columns, r[i] upper triangular (exact zeros below the
diagonal) and q[i] @ r[i] = a[i]. Sign convention: every diagonal entry of r is positive (this makes
the factorization unique; torch.linalg.qr may return negative ones, which the reference flips
together with the matching column of q). Householder reflections or modified Gram-Schmidt both
work for these well-conditioned inputs (cond(a) <= 5); one matrix per program.
""",
    reference=qr_reference,
    make_inputs=_qr_inputs,
    shapes={
        "dev": [_qr_case(2, 8, 8), _qr_case(2, 40, 16), _qr_case(1, 64, 32)],
        "heldout": [_qr_case(3, 5, 1), _qr_case(1, 33, 33), _qr_case(2, 100, 20), _qr_case(1, 128, 64)],
        "bench": [_qr_case(16384, 64, 32), _qr_case(65536, 32, 16)],
    },
    dtypes=("float32",),
    tolerances={"float32": FACTOR_TOLERANCE},
    flops=lambda c: c["b"] * (2 * c["m"] * c["n"] * c["n"] + c["m"] * c["n"]),
    bytes=lambda c: 4 * c["b"] * (2 * c["m"] * c["n"] + c["n"] * c["n"]),
    distributions=("normal", "uniform"),
    vendor=qr_reference,
    vendor_name="cuSOLVER batched geqrf + orgqr (torch.linalg.qr) and a sign fix",
))

register(Task(
    id="linalg/spd-inverse",
    entrypoint="spd_inverse",
    signature="def spd_inverse(a: torch.Tensor) -> torch.Tensor",
    description="""
Batched inverse of small symmetric positive-definite matrices through their Cholesky factor, as
torch.cholesky_inverse(torch.linalg.cholesky(a)): a is a contiguous float32 (B, n, n) tensor of SPD
matrices, 1 <= n <= 64, exactly symmetric; return a new contiguous float32 (B, n, n) tensor holding
a[i]^-1 (full, symmetric). Factor a = L L^T, invert the triangular L, and form L^-T L^-1; general
Gaussian elimination also passes but does twice the work. One matrix per program; the matrices are
well conditioned (eigenvalues in [1, ~5]).
""",
    reference=lambda a: _row_major(torch.cholesky_inverse(torch.linalg.cholesky(a))),
    make_inputs=lambda case, s: {"a": _spd(case, s)},
    shapes={
        "dev": [_factor_case(2, 8), _factor_case(1, 20), _factor_case(1, 40)],
        "heldout": [_factor_case(2, 1), _factor_case(1, 33), _factor_case(1, 64)],
        "bench": [_factor_case(65536, 32), _factor_case(16384, 64)],
    },
    dtypes=("float32",),
    tolerances={"float32": FACTOR_TOLERANCE},
    flops=lambda c: c["b"] * c["n"] ** 3,
    bytes=lambda c: 4 * c["b"] * (c["n"] * (c["n"] + 1) // 2 + c["n"] * c["n"]),
    distributions=("normal", "uniform"),
    vendor=lambda a: torch.cholesky_inverse(torch.linalg.cholesky(a)),
    vendor_name="cuSOLVER potrf + potri (torch.cholesky_inverse(torch.linalg.cholesky(a)))",
    notes="FLOPs are n^3 per matrix: n^3/3 each for the factorization, the triangular inverse and L^-T L^-1.",
))


# ---------------------------------------------------------------------------------------------
# BLAS-2 and friends.

register(Task(
    id="linalg/matvec-t",
    entrypoint="matvec_t",
    signature="def matvec_t(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor",
    description="""
Transposed matrix-vector product y = A^T @ x: a is a contiguous (M, N) tensor and x a contiguous (M,)
tensor of the same dtype (float32, float16 or bfloat16); y[j] = sum_i a[i, j] * x[i]. Accumulate in
float32 and return a new (N,) tensor of the input dtype. The reduction runs down the columns of a
row-major matrix, so reading whole rows keeps loads coalesced; with few columns (small N) the rows
must also be split across programs to fill the GPU. Memory-bound: stream a once.
""",
    reference=lambda a, x: a.transpose(0, 1) @ x,
    make_inputs=lambda case, s: {
        "a": s.tensor((case["m"], case["n"]), case["dtype"]),
        "x": s.tensor((case["m"],), case["dtype"]),
    },
    shapes={
        "dev": [
            {"m": 100, "n": 64, "dtype": "float32"},
            {"m": 513, "n": 300, "dtype": "float16"},
            {"m": 200, "n": 33, "dtype": "bfloat16"},
        ],
        "heldout": [
            {"m": 1000, "n": 1, "dtype": "float32"},
            {"m": 96, "n": 777, "dtype": "float16"},
            {"m": 2049, "n": 129, "dtype": "float32"},
            {"m": 300, "n": 100, "dtype": "bfloat16"},
        ],
        "bench": [
            {"m": 32768, "n": 16384, "dtype": "float16"},
            {"m": 16384, "n": 16384, "dtype": "float32"},
            {"m": 8192, "n": 65536, "dtype": "bfloat16"},
        ],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances=BLAS2_TOLERANCES,
    flops=lambda c: 2 * c["m"] * c["n"],
    bytes=lambda c: (c["m"] * c["n"] + c["m"] + c["n"]) * elem_size(c["dtype"]),
    # No outliers, as in matmul/gemv: products of two x100 elements, rounded in an fp32 sum that cancels to
    # O(1), exceed the float32 bound (scripts/tolerance_audit.py: 4 of 30 draws of the M = 2049 case).
    distributions=("normal", "uniform"),
    vendor=lambda a, x: torch.mv(a.t(), x),
    vendor_name="cuBLAS GEMV, transposed (torch.mv(a.t(), x))",
))

register(Task(
    id="linalg/outer",
    entrypoint="outer",
    signature="def outer(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor",
    description="""
Outer product, as torch.outer(x, y): x is a contiguous (M,) tensor and y a contiguous (N,) tensor of
the same dtype (float32, float16 or bfloat16); out[i, j] = x[i] * y[j], one rounding to the input
dtype. Return a new contiguous (M, N) tensor of that dtype. The kernel is bound by writing the
output: use wide, coalesced stores.
""",
    reference=lambda x, y: torch.outer(x, y),
    make_inputs=lambda case, s: {
        "x": s.tensor((case["m"],), case["dtype"]),
        "y": s.tensor((case["n"],), case["dtype"]),
    },
    shapes={
        "dev": [
            {"m": 100, "n": 64, "dtype": "float32"},
            {"m": 300, "n": 513, "dtype": "float16"},
            {"m": 33, "n": 200, "dtype": "bfloat16"},
        ],
        "heldout": [
            {"m": 1, "n": 1000, "dtype": "float32"},
            {"m": 777, "n": 96, "dtype": "float16"},
            {"m": 129, "n": 2049, "dtype": "float32"},
            {"m": 100, "n": 300, "dtype": "bfloat16"},
        ],
        "bench": [
            {"m": 32768, "n": 32768, "dtype": "float16"},
            {"m": 16384, "n": 32768, "dtype": "float32"},
            {"m": 32768, "n": 32768, "dtype": "bfloat16"},
        ],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances={
        "float32": Tolerance(1e-6, 1e-6, 1e-6, "one fp32 product per element: exact up to one rounding"),
        "float16": Tolerance(1e-5, 1e-3, 5e-4, "one fp16 rounding of an exact product (<= 4.9e-4 relative)"),
        "bfloat16": Tolerance(1e-4, 8e-3, 4e-3, "one bf16 rounding of an exact product (<= 3.9e-3 relative)"),
    },
    flops=lambda c: c["m"] * c["n"],
    bytes=lambda c: (c["m"] + c["n"] + c["m"] * c["n"]) * elem_size(c["dtype"]),
    distributions=("normal", "uniform", "outliers"),
    vendor=lambda x, y: torch.outer(x, y),
    vendor_name="PyTorch (torch.outer, an elementwise kernel)",
))


def diagonal_trace_reference(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    diag = torch.diagonal(x, dim1=-2, dim2=-1)
    return _row_major(diag), diag.sum(-1)


register(Task(
    id="linalg/diagonal-trace",
    entrypoint="diagonal_trace",
    signature="def diagonal_trace(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]",
    description="""
Diagonal and trace of a batch of square matrices: x is a contiguous (B, n, n) tensor of float32,
float16 or bfloat16; return (diag, trace), where diag is a new contiguous (B, n) tensor with
diag[i, j] = x[i, j, j] and trace a new (B,) tensor with trace[i] = sum_j x[i, j, j], both of the
input dtype; accumulate the trace in float32. Only the diagonal needs reading: each element sits
in its own 32-byte memory sector, so the byte count below charges a sector per diagonal element.
""",
    reference=diagonal_trace_reference,
    make_inputs=lambda case, s: {"x": s.tensor((case["b"], case["n"], case["n"]), case["dtype"])},
    shapes={
        "dev": [
            {"b": 2, "n": 10, "dtype": "float32"},
            {"b": 3, "n": 100, "dtype": "float16"},
            {"b": 2, "n": 33, "dtype": "bfloat16"},
        ],
        "heldout": [
            {"b": 1, "n": 1, "dtype": "float32"},
            {"b": 5, "n": 257, "dtype": "float16"},
            {"b": 4, "n": 1000, "dtype": "float32"},
            {"b": 2, "n": 50, "dtype": "bfloat16"},
        ],
        "bench": [
            {"b": 512, "n": 1024, "dtype": "float32"},
            {"b": 256, "n": 2048, "dtype": "float16"},
        ],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances={
        "float32": Tolerance(1e-4, 1e-4, 1e-5, "the diagonal is copied exactly; a trace sums <= 2048 terms"),
        "float16": Tolerance(1e-3, 1e-2, 2e-3, "fp16 rounding of the fp32 trace dominates"),
        "bfloat16": Tolerance(8e-3, 3e-2, 1e-2, "bf16 rounding of the fp32 trace dominates"),
    },
    flops=lambda c: c["b"] * c["n"],
    bytes=lambda c: c["b"] * c["n"] * 32 + (c["b"] * c["n"] + c["b"]) * elem_size(c["dtype"]),
    distributions=("normal", "uniform"),
    notes="Bytes charge one 32-byte sector per diagonal element read (the DRAM access granularity).",
))


def _syrk_inputs(case, s):
    n, k = case["n"], case["k"]
    sym = s.tensor((n, n), case["dtype"]).to(torch.float32)
    return {
        "c": ((sym + sym.t()) * 0.5).to(dtype_of(case["dtype"])),
        "a": s.tensor((n, k), case["dtype"]),
        "beta": case["beta"],
        "alpha": case["alpha"],
    }


def _syrk_case(n: int, k: int, dtype: str, alpha: float, beta: float) -> dict[str, object]:
    return {"n": n, "k": k, "dtype": dtype, "alpha": alpha, "beta": beta}


register(Task(
    id="linalg/syrk",
    entrypoint="syrk",
    signature=(
        "def syrk(c: torch.Tensor, a: torch.Tensor, beta: float = 1.0, alpha: float = 1.0) -> torch.Tensor"
    ),
    description="""
Symmetric rank-k update (BLAS syrk), out = beta * c + alpha * (a @ a^T): a is a contiguous (N, K)
tensor and c a contiguous, exactly symmetric (N, N) tensor of the same dtype (float32, float16 or
bfloat16). Return a new contiguous (N, N) tensor of that dtype holding the FULL symmetric result
(both triangles). The result is symmetric: computing only the tiles on and below the diagonal and
mirroring them halves the arithmetic. Accumulate in float32; apply alpha and beta in float32
before the single rounding. float32 inputs need IEEE float32 products (TF32 fails the tolerance;
in Triton use tl.dot(..., input_precision="ieee")). N and K are often not multiples of 16.
""",
    reference=lambda c, a, beta=1.0, alpha=1.0: torch.addmm(c, a, a.t(), beta=beta, alpha=alpha),
    make_inputs=_syrk_inputs,
    shapes={
        "dev": [
            _syrk_case(48, 40, "float16", 1.0, 0.5),
            _syrk_case(70, 33, "float32", 0.5, -1.0),
            _syrk_case(33, 64, "bfloat16", 1.0, 1.0),
        ],
        "heldout": [
            _syrk_case(1, 100, "float32", 2.0, 1.0),
            _syrk_case(129, 65, "float16", -1.0, 2.0),
            _syrk_case(100, 200, "float32", 1.0, 0.0),
            _syrk_case(60, 30, "bfloat16", 0.5, 0.5),
        ],
        "bench": [
            _syrk_case(8192, 8192, "bfloat16", 1.0, 1.0),
            _syrk_case(4096, 4096, "float32", 1.0, 1.0),
        ],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances=GEMM_TOLERANCES,
    flops=lambda c: c["n"] * (c["n"] + 1) * c["k"] + 3 * c["n"] * c["n"],
    bytes=lambda c: (c["n"] * c["k"] + 2 * c["n"] * c["n"]) * elem_size(c["dtype"]),
    distributions=("normal", "uniform"),
    vendor=lambda c, a, beta=1.0, alpha=1.0: torch.addmm(c, a, a.t(), beta=beta, alpha=alpha),
    vendor_name="cuBLAS GEMM (torch.addmm(c, a, a.t()); does not exploit symmetry)",
    notes="FLOPs count the lower triangle only (N(N+1)K), the least a symmetric kernel must do.",
))

register(Task(
    id="linalg/gram",
    entrypoint="gram",
    signature="def gram(x: torch.Tensor) -> torch.Tensor",
    description="""
Gram matrix of the columns of a tall matrix, G = X^T @ X: x is a contiguous (M, N) tensor of
float32, float16 or bfloat16 with M large (up to millions of rows) and N small (at most a few
hundred); return a new contiguous float32 (N, N) tensor, G[i, j] = sum_r x[r, i] * x[r, j],
accumulated in float32 (no rounding to 16 bits). The inputs are scaled so that G has O(1) diagonal.
The output has few tiles, so the long reduction over M must be split across programs and the
partial sums combined. float32 inputs need IEEE float32 products (TF32 fails the tolerance; in
Triton use tl.dot(..., input_precision="ieee")).
""",
    performance_note=(
        "0.78x of torch.compile and 0.79x of cuBLAS on the H100, 2026-12-06 (`warpgym suite check --device "
        "cuda`; no H200 could be had): 0.281 ms at fp16 n=256 (1.91 TB/s), 0.452 ms at fp32 n=128 (19 "
        "TFLOP/s of IEEE float32 FMA, 0.59 TB/s), 0.157 ms at bf16 n=128 (1.71 TB/s). Tried "
        "(scripts/triton_ref_sweep.py, same window): a 128x64-tile rewrite at 0.76-0.81x, slower than this "
        "one at fp16 (0.330 against 0.308 ms). Likely cause, not profiled: each program reads its slice's "
        "X^T and X tiles separately, so every row of X crosses L2 to shared memory twice, and the partial "
        "tiles make a second pass through the (SPLIT, N, N) workspace"
    ),
    reference=lambda x: (x.transpose(0, 1) @ x).to(torch.float32),
    make_inputs=lambda case, s: {
        "x": s.tensor((case["m"], case["n"]), case["dtype"], scale=1.0 / math.sqrt(case["m"])),
    },
    shapes={
        "dev": [
            {"m": 1000, "n": 16, "dtype": "float32"},
            {"m": 3000, "n": 40, "dtype": "float16"},
            {"m": 500, "n": 33, "dtype": "bfloat16"},
        ],
        "heldout": [
            {"m": 1, "n": 8, "dtype": "float32"},
            {"m": 5000, "n": 24, "dtype": "float16"},
            {"m": 2049, "n": 65, "dtype": "float32"},
            {"m": 800, "n": 20, "dtype": "bfloat16"},
        ],
        "bench": [
            {"m": 1048576, "n": 256, "dtype": "float16"},
            {"m": 524288, "n": 128, "dtype": "float32"},
            {"m": 1048576, "n": 128, "dtype": "bfloat16"},
        ],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances={"float32": Tolerance(
        1e-6, 2e-4, 1.5e-4,
        "fp32 sums of up to 1M same-sign products (uniform inputs) drift ~1e-4 relative (H200, 2026-11-29); "
        "rounding to 16 bits gives ~3e-4 and fails")},
    flops=lambda c: c["m"] * c["n"] * (c["n"] + 1),
    bytes=lambda c: c["m"] * c["n"] * elem_size(c["dtype"]) + 4 * c["n"] * c["n"],
    distributions=("normal", "uniform"),
    vendor=lambda x: torch.matmul(x.t(), x).float(),
    vendor_name="cuBLAS GEMM (torch.matmul(x.t(), x), then a cast for 16-bit inputs)",
    notes="FLOPs count one triangle (M N (N+1)), the least a symmetric kernel must do.",
))
