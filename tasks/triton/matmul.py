"""Matrix multiplication."""

from __future__ import annotations

import torch

from ..registry import register
from ..spec import Task, Tolerance, elem_size

register(Task(
    id="matmul/matmul",
    entrypoint="matmul",
    signature="def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor",
    description="""
Matrix product C = A @ B of a contiguous (M, K) tensor a and a contiguous (K, N) tensor b.
a and b are both float16 or both bfloat16; accumulate in float32 and return a new contiguous
(M, N) tensor of the input dtype. M, N and K are often not multiples of 16 (or of your tiles).
""",
    reference=lambda a, b: a @ b,
    make_inputs=lambda case, s: {
        "a": s.tensor((case["m"], case["k"]), case["dtype"]),
        "b": s.tensor((case["k"], case["n"]), case["dtype"]),
    },
    shapes={
        "dev": [
            {"m": 64, "n": 48, "k": 80, "dtype": "float16"},
            {"m": 100, "n": 70, "k": 90, "dtype": "float16"},
            {"m": 33, "n": 65, "k": 17, "dtype": "bfloat16"},
        ],
        "heldout": [
            {"m": 129, "n": 257, "k": 100, "dtype": "float16"},
            {"m": 1, "n": 513, "k": 77, "dtype": "float16"},
            {"m": 200, "n": 96, "k": 250, "dtype": "bfloat16"},
            {"m": 128, "n": 128, "k": 96, "dtype": "float16"},
        ],
        "bench": [
            {"m": 8192, "n": 8192, "k": 8192, "dtype": "bfloat16"},
            {"m": 4096, "n": 4096, "k": 4096, "dtype": "float16"},
        ],
    },
    dtypes=("float16", "bfloat16"),
    tolerances={
        "float16": Tolerance(1e-2, 1e-2, 2e-3,
                             "fp32 accumulation is near exact; fp16 output rounding dominates"),
        "bfloat16": Tolerance(2e-2, 2e-2, 1e-2, "bf16 output rounding (4e-3 relative) dominates"),
    },
    flops=lambda c: 2 * c["m"] * c["n"] * c["k"],
    bytes=lambda c: (c["m"] * c["k"] + c["k"] * c["n"] + c["m"] * c["n"]) * elem_size(c["dtype"]),
    distributions=("normal", "uniform"),
    vendor=lambda a, b: torch.matmul(a, b),
    vendor_name="cuBLAS (torch.matmul)",
))


# ---------------------------------------------------------------------------------------------
# Shared pieces of the GEMM family below.

GEMM_TOLERANCES = {
    "float16": Tolerance(1e-2, 1e-2, 2e-3, "fp32 accumulation is near exact; fp16 output rounding dominates"),
    "bfloat16": Tolerance(2e-2, 2e-2, 1e-2, "bf16 output rounding (4e-3 relative) dominates"),
}
FP32_OUT_TOLERANCE = Tolerance(
    1e-3, 1e-4, 5e-5,
    "fp32 output of exact fp16/bf16 products: only fp32 accumulation error (~1e-6 relative at K=4096); "
    "rounding the result to 16 bits (~3e-4 relative) fails",
)
FP32_IEEE_TOLERANCE = Tolerance(
    1e-3, 1e-4, 1e-5,
    "IEEE fp32 FMAs: ~3e-7 relative L2 at K=8192; TF32 inputs (10-bit mantissa) give ~5e-4 and fail",
)


def _gemm_bytes(m: int, n: int, k: int, in_size: int, out_size: int, batch: int = 1) -> int:
    return batch * ((m * k + k * n) * in_size + m * n * out_size)


def _mm_case(m: int, n: int, k: int, dtype: str, **extra: object) -> dict[str, object]:
    return {"m": m, "n": n, "k": k, "dtype": dtype, **extra}


def _mm_out_fp32_vendor(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """cuBLAS with an fp32 output (aten::mm.dtype, CUDA only in torch 2.11+)."""
    return torch.mm(a, b, out_dtype=torch.float32)


register(Task(
    id="matmul/matmul-nt",
    entrypoint="matmul_nt",
    signature="def matmul_nt(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor",
    description="""
Matrix product with the second operand transposed, C = A @ B^T: a is a contiguous (M, K) tensor
and b a contiguous (N, K) tensor (the layout of a linear layer's weight), so
C[i, j] = sum_k a[i, k] * b[j, k]. a and b are both float16 or both bfloat16; accumulate in float32
and return a new contiguous (M, N) tensor of the input dtype. Do not copy b into a transposed
buffer: read it in place. M, N and K are often not multiples of 16 (or of your tiles).
""",
    reference=lambda a, b: a @ b.transpose(-1, -2),
    make_inputs=lambda case, s: {
        "a": s.tensor((case["m"], case["k"]), case["dtype"]),
        "b": s.tensor((case["n"], case["k"]), case["dtype"]),
    },
    shapes={
        "dev": [
            _mm_case(64, 48, 80, "float16"),
            _mm_case(100, 70, 90, "float16"),
            _mm_case(33, 65, 17, "bfloat16"),
        ],
        "heldout": [
            _mm_case(129, 200, 100, "float16"),
            _mm_case(1, 130, 77, "float16"),
            _mm_case(150, 96, 250, "bfloat16"),
            _mm_case(128, 128, 96, "float16"),  # whole tiles: a kernel's unmasked path runs here too
        ],
        "bench": [
            _mm_case(8192, 8192, 8192, "bfloat16"),
            _mm_case(4096, 4096, 4096, "float16"),
        ],
    },
    dtypes=("float16", "bfloat16"),
    tolerances=GEMM_TOLERANCES,
    flops=lambda c: 2 * c["m"] * c["n"] * c["k"],
    bytes=lambda c: _gemm_bytes(c["m"], c["n"], c["k"], elem_size(c["dtype"]), elem_size(c["dtype"])),
    distributions=("normal", "uniform"),
    vendor=lambda a, b: torch.matmul(a, b.t()),
    vendor_name="cuBLAS (torch.matmul(a, b.t()))",
))

register(Task(
    id="matmul/matmul-tn",
    entrypoint="matmul_tn",
    signature="def matmul_tn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor",
    description="""
Matrix product with the first operand transposed, C = A^T @ B, the weight-gradient product of a
linear layer (dW = X^T dY): a is a contiguous (K, M) tensor and b a contiguous (K, N) tensor, so
C[i, j] = sum_k a[k, i] * b[k, j]. a and b are both float16 or both bfloat16; accumulate in float32
and return a new contiguous (M, N) tensor of the input dtype. Read a in place (no transposed copy).
K is usually the largest dimension (tokens); M, N and K are often not multiples of 16.
""",
    reference=lambda a, b: a.transpose(-1, -2) @ b,
    make_inputs=lambda case, s: {
        "a": s.tensor((case["k"], case["m"]), case["dtype"]),
        "b": s.tensor((case["k"], case["n"]), case["dtype"]),
    },
    shapes={
        "dev": [
            _mm_case(48, 64, 80, "float16"),
            _mm_case(70, 100, 150, "float16"),
            _mm_case(33, 65, 40, "bfloat16"),
        ],
        "heldout": [
            _mm_case(129, 96, 300, "float16"),
            _mm_case(7, 130, 77, "float16"),
            _mm_case(100, 64, 250, "bfloat16"),
        ],
        "bench": [
            _mm_case(8192, 8192, 16384, "bfloat16"),
            _mm_case(4096, 4096, 8192, "float16"),
        ],
    },
    dtypes=("float16", "bfloat16"),
    tolerances=GEMM_TOLERANCES,
    flops=lambda c: 2 * c["m"] * c["n"] * c["k"],
    bytes=lambda c: _gemm_bytes(c["m"], c["n"], c["k"], elem_size(c["dtype"]), elem_size(c["dtype"])),
    distributions=("normal", "uniform"),
    vendor=lambda a, b: torch.matmul(a.t(), b),
    vendor_name="cuBLAS (torch.matmul(a.t(), b))",
))

register(Task(
    id="matmul/matmul-fp32",
    entrypoint="matmul_fp32",
    signature="def matmul_fp32(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor",
    description="""
Matrix product C = A @ B in full float32 precision: a is a contiguous float32 (M, K) tensor, b a
contiguous float32 (K, N) tensor; return a new contiguous float32 (M, N) tensor. Products and sums
must be IEEE float32: TF32 tensor-core math (inputs rounded to a 10-bit mantissa, ~5e-4 relative
error) does not meet the tolerance. In Triton that means tl.dot(..., input_precision="ieee"), whose
default for float32 is TF32 on NVIDIA GPUs. M, N and K are often not multiples of 16.
""",
    reference=lambda a, b: a @ b,
    make_inputs=lambda case, s: {
        "a": s.tensor((case["m"], case["k"]), "float32"),
        "b": s.tensor((case["k"], case["n"]), "float32"),
    },
    shapes={
        "dev": [
            _mm_case(64, 48, 80, "float32"),
            _mm_case(100, 70, 90, "float32"),
        ],
        "heldout": [
            _mm_case(129, 200, 100, "float32"),
            _mm_case(1, 77, 300, "float32"),
            _mm_case(65, 33, 17, "float32"),
        ],
        "bench": [
            _mm_case(8192, 8192, 8192, "float32"),
            _mm_case(4096, 4096, 4096, "float32"),
        ],
    },
    dtypes=("float32",),
    tolerances={"float32": FP32_IEEE_TOLERANCE},
    flops=lambda c: 2 * c["m"] * c["n"] * c["k"],
    bytes=lambda c: _gemm_bytes(c["m"], c["n"], c["k"], 4, 4),
    distributions=("normal", "uniform"),
    vendor=lambda a, b: torch.matmul(a, b),
    vendor_name="cuBLAS SGEMM (torch.matmul, TF32 off as by default)",
    notes="On the CPU the interpreter reads float32 tl.dot operands at TF32 precision unless input_precision "
          "asks for more, as the GPU's tensor cores do, so a TF32 kernel fails on both.",
))

register(Task(
    id="matmul/bmm",
    entrypoint="bmm",
    signature="def bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor",
    description="""
Batched matrix product, as torch.bmm: a is a contiguous (B, M, K) tensor, b a contiguous (B, K, N)
tensor, out[i] = a[i] @ b[i]. a and b are both float16 or both bfloat16; accumulate in float32 and
return a new contiguous (B, M, N) tensor of the input dtype. Batches can be many and small or few and
large; M, N and K are often not multiples of 16.
""",
    reference=lambda a, b: torch.bmm(a, b),
    make_inputs=lambda case, s: {
        "a": s.tensor((case["b"], case["m"], case["k"]), case["dtype"]),
        "b": s.tensor((case["b"], case["k"], case["n"]), case["dtype"]),
    },
    shapes={
        "dev": [
            _mm_case(32, 48, 40, "float16", b=3),
            _mm_case(70, 60, 90, "float16", b=2),
            _mm_case(33, 17, 20, "bfloat16", b=2),
        ],
        "heldout": [
            _mm_case(1, 100, 64, "float16", b=5),
            _mm_case(129, 65, 100, "float16", b=2),
            _mm_case(40, 48, 33, "bfloat16", b=3),
            _mm_case(128, 128, 96, "float16", b=2),  # whole tiles: a kernel's unmasked path runs here too
        ],
        "bench": [
            _mm_case(4096, 4096, 4096, "bfloat16", b=8),
            _mm_case(512, 512, 512, "float16", b=512),
        ],
    },
    dtypes=("float16", "bfloat16"),
    tolerances=GEMM_TOLERANCES,
    flops=lambda c: 2 * c["b"] * c["m"] * c["n"] * c["k"],
    bytes=lambda c: _gemm_bytes(c["m"], c["n"], c["k"], elem_size(c["dtype"]), elem_size(c["dtype"]), c["b"]),
    distributions=("normal", "uniform"),
    vendor=lambda a, b: torch.bmm(a, b),
    vendor_name="cuBLAS (torch.bmm)",
))


def _linear_inputs(case, s):
    return {
        "x": s.tensor((case["m"], case["k"]), case["dtype"]),
        "weight": s.tensor((case["n"], case["k"]), case["dtype"]),
        "bias": s.normal((case["n"],), case["dtype"], std=2.0),
    }


register(Task(
    id="matmul/linear",
    entrypoint="linear",
    signature="def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor",
    description="""
A linear layer with bias, as torch.nn.functional.linear(x, weight, bias): x is a contiguous (M, K)
tensor, weight a contiguous (N, K) tensor and bias an (N,) tensor;
out[i, j] = sum_k x[i, k] * weight[j, k] + bias[j]. All three share one dtype, float16 or bfloat16;
accumulate in float32, add the bias in float32 before the single rounding to the output dtype, and
return a new contiguous (M, N) tensor of that dtype. M, N and K are often not multiples of 16.
""",
    reference=lambda x, weight, bias: torch.nn.functional.linear(x, weight, bias),
    make_inputs=_linear_inputs,
    shapes={
        "dev": [
            _mm_case(64, 48, 80, "float16"),
            _mm_case(100, 70, 90, "float16"),
            _mm_case(33, 65, 17, "bfloat16"),
        ],
        "heldout": [
            _mm_case(129, 200, 100, "float16"),
            _mm_case(3, 77, 130, "float16"),
            _mm_case(150, 96, 64, "bfloat16"),
            _mm_case(128, 128, 96, "float16"),  # whole tiles: a kernel's unmasked path runs here too
        ],
        "bench": [
            _mm_case(8192, 8192, 8192, "bfloat16"),
            _mm_case(16384, 4096, 4096, "float16"),
        ],
    },
    dtypes=("float16", "bfloat16"),
    tolerances=GEMM_TOLERANCES,
    flops=lambda c: 2 * c["m"] * c["n"] * c["k"] + c["m"] * c["n"],
    bytes=lambda c: _gemm_bytes(c["m"], c["n"], c["k"], elem_size(c["dtype"]), elem_size(c["dtype"]))
    + c["n"] * elem_size(c["dtype"]),
    distributions=("normal", "uniform"),
    vendor=lambda x, weight, bias: torch.nn.functional.linear(x, weight, bias),
    vendor_name="cuBLASLt with bias epilogue (torch.nn.functional.linear)",
))

register(Task(
    id="matmul/matmul-out-fp32",
    entrypoint="matmul_out_fp32",
    signature="def matmul_out_fp32(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor",
    description="""
Mixed-precision matrix product C = A @ B with a float32 result: a is a contiguous (M, K) tensor and
b a contiguous (K, N) tensor, both float16 or both bfloat16; accumulate in float32 and return a new
contiguous float32 (M, N) tensor without rounding it to 16 bits (that rounding, ~3e-4 relative,
fails the tolerance). M, N and K are often not multiples of 16.
""",
    reference=lambda a, b: (a @ b).to(torch.float32),
    make_inputs=lambda case, s: {
        "a": s.tensor((case["m"], case["k"]), case["dtype"]),
        "b": s.tensor((case["k"], case["n"]), case["dtype"]),
    },
    shapes={
        "dev": [
            _mm_case(64, 48, 80, "float16"),
            _mm_case(100, 70, 90, "float16"),
            _mm_case(33, 65, 17, "bfloat16"),
        ],
        "heldout": [
            _mm_case(129, 200, 100, "float16"),
            _mm_case(2, 130, 300, "float16"),
            _mm_case(150, 96, 250, "bfloat16"),
        ],
        "bench": [
            _mm_case(8192, 8192, 4096, "bfloat16"),
            _mm_case(4096, 4096, 4096, "float16"),
        ],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances={"float32": FP32_OUT_TOLERANCE},
    flops=lambda c: 2 * c["m"] * c["n"] * c["k"],
    bytes=lambda c: _gemm_bytes(c["m"], c["n"], c["k"], elem_size(c["dtype"]), 4),
    distributions=("normal", "uniform"),
    vendor=_mm_out_fp32_vendor,
    vendor_name="cuBLAS with fp32 output (torch.mm(a, b, out_dtype=torch.float32))",
))

register(Task(
    id="matmul/matmul-skinny",
    entrypoint="matmul_skinny",
    signature="def matmul_skinny(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor",
    description="""
A decode-time linear layer without bias, out = x @ weight^T, with few rows: x is a contiguous (M, K)
tensor with 1 <= M <= 64 (tokens in flight), weight a contiguous (N, K) tensor with N and K in the
thousands; out[i, j] = sum_k x[i, k] * weight[j, k]. Both are float16 or both bfloat16; accumulate in
float32 and return a new contiguous (M, N) tensor of the input dtype. The weight is read once and
dominates the traffic, so the kernel is memory-bound: a tile of 128 rows of x wastes the tensor
cores and launches too few programs.
""",
    reference=lambda x, weight: x @ weight.transpose(-1, -2),
    make_inputs=lambda case, s: {
        "x": s.tensor((case["m"], case["k"]), case["dtype"]),
        "weight": s.tensor((case["n"], case["k"]), case["dtype"]),
    },
    shapes={
        "dev": [
            _mm_case(1, 96, 128, "float16"),
            _mm_case(4, 200, 300, "float16"),
            _mm_case(8, 64, 100, "bfloat16"),
        ],
        "heldout": [
            _mm_case(3, 257, 200, "float16"),
            _mm_case(16, 130, 513, "float16"),
            _mm_case(2, 100, 96, "bfloat16"),
        ],
        "bench": [
            _mm_case(8, 28672, 8192, "bfloat16"),
            _mm_case(32, 8192, 8192, "float16"),
            _mm_case(1, 16384, 16384, "float16"),
        ],
    },
    dtypes=("float16", "bfloat16"),
    tolerances=GEMM_TOLERANCES,
    flops=lambda c: 2 * c["m"] * c["n"] * c["k"],
    bytes=lambda c: (c["m"] * c["k"] + c["n"] * c["k"] + c["m"] * c["n"]) * elem_size(c["dtype"]),
    distributions=("normal", "uniform"),
    vendor=lambda x, weight: torch.matmul(x, weight.t()),
    vendor_name="cuBLAS (torch.matmul(x, weight.t()))",
))

register(Task(
    id="matmul/matmul-splitk",
    entrypoint="matmul_splitk",
    signature="def matmul_splitk(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor",
    description="""
Matrix product C = A @ B with a small output and a long reduction: a is a contiguous (M, K) tensor,
b a contiguous (K, N) tensor, M and N at most a few hundred and K tens to hundreds of times larger.
a and b are both float16 or both bfloat16; accumulate in float32 and return a new contiguous (M, N)
tensor of the input dtype. One program per output tile leaves most of the GPU idle: split the
K dimension across programs and combine the partial sums (in float32, before the single rounding
to the output dtype). M, N and K are often not multiples of 16.
""",
    reference=lambda a, b: a @ b,
    make_inputs=lambda case, s: {
        "a": s.tensor((case["m"], case["k"]), case["dtype"]),
        "b": s.tensor((case["k"], case["n"]), case["dtype"]),
    },
    shapes={
        "dev": [
            _mm_case(32, 48, 1000, "float16"),
            _mm_case(50, 40, 2500, "float16"),
            _mm_case(16, 33, 800, "bfloat16"),
        ],
        "heldout": [
            _mm_case(64, 64, 3001, "float16"),
            _mm_case(5, 70, 1777, "float16"),
            _mm_case(40, 24, 1200, "bfloat16"),
        ],
        "bench": [
            _mm_case(512, 512, 262144, "bfloat16"),
            _mm_case(256, 1024, 131072, "float16"),
        ],
    },
    dtypes=("float16", "bfloat16"),
    tolerances=GEMM_TOLERANCES,
    flops=lambda c: 2 * c["m"] * c["n"] * c["k"],
    bytes=lambda c: _gemm_bytes(c["m"], c["n"], c["k"], elem_size(c["dtype"]), elem_size(c["dtype"])),
    distributions=("normal", "uniform"),
    vendor=lambda a, b: torch.matmul(a, b),
    vendor_name="cuBLAS (torch.matmul; picks its own split-K)",
))

register(Task(
    id="matmul/gemv",
    entrypoint="gemv",
    signature="def gemv(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor",
    description="""
Matrix-vector product y = A @ x (a GEMM with N = 1), as torch.mv: a is a contiguous (M, K) tensor and
x a contiguous (K,) tensor of the same dtype, float32, float16 or bfloat16; y[i] = sum_k a[i, k] * x[k].
Accumulate in float32 and return a new (M,) tensor of the input dtype. The matrix is read once:
the kernel is memory-bound and should stream a at full bandwidth. M and K are often not multiples
of your block sizes.
""",
    reference=lambda a, x: torch.mv(a, x),
    make_inputs=lambda case, s: {
        "a": s.tensor((case["m"], case["k"]), case["dtype"]),
        "x": s.tensor((case["k"],), case["dtype"]),
    },
    shapes={
        "dev": [
            {"m": 64, "k": 100, "dtype": "float32"},
            {"m": 300, "k": 513, "dtype": "float16"},
            {"m": 33, "k": 200, "dtype": "bfloat16"},
        ],
        "heldout": [
            {"m": 1, "k": 1000, "dtype": "float32"},
            {"m": 777, "k": 96, "dtype": "float16"},
            {"m": 129, "k": 2049, "dtype": "float32"},
            {"m": 100, "k": 300, "dtype": "bfloat16"},
        ],
        "bench": [
            {"m": 32768, "k": 16384, "dtype": "float16"},
            {"m": 16384, "k": 16384, "dtype": "float32"},
            {"m": 65536, "k": 8192, "dtype": "bfloat16"},
        ],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances={
        "float32": Tolerance(1e-4, 1e-4, 1e-5, "fp32 dot products of length K; reordering costs ~1e-7"),
        **GEMM_TOLERANCES,
    },
    flops=lambda c: 2 * c["m"] * c["k"],
    bytes=lambda c: (c["m"] * c["k"] + c["k"] + c["m"]) * elem_size(c["dtype"]),
    # No outliers: x100 elements in both operands meet in products of ~1e4, whose fp32 rounding in the sum
    # exceeds the float32 bound wherever a row's sum cancels to O(1); 64 lanes a row summed in order, then
    # a tree, missed it in 2 of 60 draws of the K = 2049 case (scripts/tolerance_audit.py finds the same).
    distributions=("normal", "uniform"),
    vendor=lambda a, x: torch.mv(a, x),
    vendor_name="cuBLAS GEMV (torch.mv)",
))


def _grouped_inputs(case, s):
    """Rows of a split into g consecutive groups of random sizes; group 1 is empty when g >= 3."""
    t, g = case["t"], case["g"]
    cuts = torch.sort(s.randint(0, t + 1, (g - 1,))).values
    if g >= 3:
        cuts[1] = cuts[0]
    ends = torch.cat([cuts, torch.full((1,), t, dtype=cuts.dtype, device=cuts.device)])
    return {
        "a": s.tensor((t, case["k"]), case["dtype"]),
        "b": s.tensor((g, case["k"], case["n"]), case["dtype"]),
        "offs": ends.to(torch.int32),
    }


def grouped_gemm_reference(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """One matmul per group, as a PyTorch user without a grouped kernel writes it."""
    out = a.new_empty((a.shape[0], b.shape[2]))
    start = 0
    for g, end in enumerate(offs.tolist()):
        out[start:end] = a[start:end] @ b[g]
        start = end
    return out


def _grouped_vendor(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """torch._grouped_mm (CUTLASS grouped GEMM; bf16 only), else one cuBLAS call per group."""
    if a.dtype == torch.bfloat16 and hasattr(torch, "_grouped_mm"):
        return torch._grouped_mm(a, b, offs=offs)
    return grouped_gemm_reference(a, b, offs)


def _grouped_case(t: int, g: int, n: int, k: int, dtype: str) -> dict[str, object]:
    return {"t": t, "g": g, "n": n, "k": k, "dtype": dtype}


register(Task(
    id="matmul/grouped-gemm",
    entrypoint="grouped_gemm",
    signature="def grouped_gemm(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor) -> torch.Tensor",
    description="""
Grouped GEMM, as in a mixture-of-experts layer: several independent matrix products of different
sizes in one call. a is a contiguous (T, K) tensor whose rows are sorted by group, b a contiguous
(G, K, N) tensor of per-group matrices, and offs a (G,) int32 tensor of cumulative row ends:
group g owns rows offs[g-1] .. offs[g]-1 of a (offs[-1] = 0 for g = 0, and offs[G-1] = T), and
out[offs[g-1]:offs[g]] = a[offs[g-1]:offs[g]] @ b[g]. Groups can be empty (equal consecutive ends).
a and b are both float16 or both bfloat16; accumulate in float32 and return a new contiguous (T, N)
tensor of the input dtype. offs lives on the device: reading it on the host (.tolist(), .item())
synchronises the GPU, so find each tile's group inside the kernel.
""",
    reference=grouped_gemm_reference,
    make_inputs=_grouped_inputs,
    shapes={
        "dev": [
            _grouped_case(100, 3, 48, 64, "float16"),
            _grouped_case(200, 5, 40, 72, "float16"),
            _grouped_case(64, 2, 32, 48, "bfloat16"),
        ],
        "heldout": [
            _grouped_case(257, 4, 65, 80, "float16"),
            _grouped_case(30, 6, 33, 40, "float16"),
            _grouped_case(150, 3, 64, 100, "bfloat16"),
        ],
        "bench": [
            _grouped_case(32768, 8, 4096, 4096, "bfloat16"),
            _grouped_case(16384, 64, 2048, 2048, "float16"),
        ],
    },
    dtypes=("float16", "bfloat16"),
    tolerances=GEMM_TOLERANCES,
    flops=lambda c: 2 * c["t"] * c["n"] * c["k"],
    bytes=lambda c: (c["t"] * c["k"] + c["g"] * c["k"] * c["n"] + c["t"] * c["n"]) * elem_size(c["dtype"])
    + 4 * c["g"],
    distributions=("normal", "uniform"),
    vendor=_grouped_vendor,
    vendor_name="torch._grouped_mm (bf16; CUTLASS) or one cuBLAS matmul per group (fp16)",
))

register(Task(
    id="matmul/int8-matmul",
    entrypoint="int8_matmul",
    signature="def int8_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor",
    description="""
Integer matrix product C = A @ B^T with exact int32 accumulation, as torch._int_mm(a, b.t()): a is a
contiguous int8 (M, K) tensor and b a contiguous int8 (N, K) tensor (weight layout), so
C[i, j] = sum_k int32(a[i, k]) * int32(b[j, k]). Return a new contiguous int32 (M, N) tensor; the
result is checked exactly. Values span the whole int8 range [-128, 127]. M, N and K are often not
multiples of 16. In Triton, tl.dot of two int8 tiles accumulates into an int32 accumulator.
""",
    reference=lambda a, b: (a.to(torch.float64) @ b.to(torch.float64).transpose(-1, -2)).to(torch.int32),
    make_inputs=lambda case, s: {
        "a": s.randint(-128, 128, (case["m"], case["k"]), "int8"),
        "b": s.randint(-128, 128, (case["n"], case["k"]), "int8"),
    },
    shapes={
        "dev": [
            _mm_case(64, 48, 80, "int8"),
            _mm_case(100, 70, 90, "int8"),
        ],
        "heldout": [
            _mm_case(129, 200, 100, "int8"),
            _mm_case(1, 33, 300, "int8"),
            _mm_case(65, 128, 17, "int8"),
        ],
        "bench": [
            _mm_case(8192, 8192, 8192, "int8"),
            _mm_case(4096, 4096, 4096, "int8"),
        ],
    },
    dtypes=("int32", "int8"),
    flops=lambda c: 2 * c["m"] * c["n"] * c["k"],
    bytes=lambda c: (c["m"] * c["k"] + c["n"] * c["k"]) + 4 * c["m"] * c["n"],
    distributions=("normal",),
    baselines=(),
    vendor=lambda a, b: torch._int_mm(a, b.t()),
    vendor_name="cuBLASLt int8 IMMA (torch._int_mm(a, b.t()))",
    notes="The float64 reference is exact: |C| < 2^31 < 2^53.",
))
