"""Reductions and scans: along rows, along columns, over the middle of a 3-D tensor, and to a scalar.

Inputs include large offsets (mean about 50) and rare outliers (about 1% of elements times 100),
where a missing max-subtraction, a one-pass variance or a careless accumulation order shows.
FLOPs count one per element combined (one add, compare, or multiply-add), plus the work of the
finishing step; bytes are the input read once and the output written once.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

import torch

from ..registry import register
from ..spec import ONE_BF16_ROUNDING, ONE_FP16_ROUNDING, Task, Tolerance, elem_size

EXACT = Tolerance(0.0, 0.0, 0.0, "the result is one of the inputs (or its index): exact")
FP16_SUM, BF16_SUM = ONE_FP16_ROUNDING, ONE_BF16_ROUNDING  # fp32 accumulation, then one rounding
LARGE_MEAN = ("Rows have a mean of 100 to 150 and a spread of 1 to 10, where the one-pass "
              "E[x^2] - E[x]^2 formula loses most digits in float32.")
TWO_PASS = Tolerance(1e-5, 1e-5, 1e-5, "two-pass variance in fp32: relative error ~1e-6 even with mean 150")


def _wrap(text: str) -> str:
    """One paragraph re-flowed to 100 columns: the helpers below assemble descriptions from pieces."""
    return textwrap.fill(" ".join(text.split()), 100)


def _case(m: int, n: int, dtype: str) -> dict[str, Any]:
    return {"m": m, "n": n, "dtype": dtype}


def _row_shapes(min_n: int = 1, ties: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Rows short and long (20000 needs a loop over the row); bench: many rows, and few long ones. ``ties``
    adds long rows of tied values (``_TIES``) to the held-out set."""
    shapes = {
        "dev": [_case(4, 100, "float32"), _case(16, 1000, "float16"), _case(3, 2048, "bfloat16")],
        "heldout": [_case(5, max(1, min_n), "float32"), _case(17, 3001, "float32"), _case(64, 781, "float16"),
                    _case(3, 20000, "float32"), _case(9, 4099, "bfloat16"),
                    # split into 3 chunks a row: a tile of partial results padded to 4 must be masked
                    _case(2, 40000, "float32")],
        "bench": [_case(16384, 16384, "float32"), _case(32768, 8192, "bfloat16"),
                  _case(64, 1 << 22, "float32")],
    }
    if ties:
        shapes["heldout"] += _TIES
    return shapes


_TIES = [_case(6, 5000, "float16") | {"grid": 1.0}, _case(3, 9000, "float32") | {"grid": 0.5}]
"""Long rows of values rounded to a coarse grid: the extreme value recurs in several blocks of a row (tens
of times in most rows), so a scan block by block must keep the earliest of them; float32 and float16 rows
never tie this way by chance, and bfloat16 rows are not run on the CPU."""


def _rows(c: Any, s: Any) -> dict[str, Any]:
    x = s.tensor((c["m"], c["n"]), c["dtype"])
    if "grid" in c:
        x = (torch.round(x.float() / c["grid"]) * c["grid"]).to(x.dtype)
    return {"x": x}


def row_reduce(
    name: str, entry: str, what: str, reference: Callable[..., torch.Tensor], *, fp32: Tolerance,
    fp16: Tolerance = FP16_SUM, bf16: Tolerance = BF16_SUM, flops: Callable[[int], int] = lambda n: n,
    out_dtype: str | None = None, distributions: tuple[str, ...] = ("normal", "large", "outliers"),
    min_n: int = 1, extra: str = "", offset: float = 0.0, ties: bool = False,
) -> Task:
    """A reduction over the last dimension of a contiguous (M, N) tensor, giving (M,)."""
    out = "int64" if out_dtype == "int64" else "x's dtype"
    return register(Task(
        id=f"reduce/{name}",
        entrypoint=entry,
        signature=f"def {entry}(x: torch.Tensor) -> torch.Tensor",
        description=_wrap(f"""
{what} over the last dimension of a contiguous (M, N) tensor x of float32, float16 or bfloat16:
out[i] = {what.split(',')[0].lower()} of x[i, :]. Return a new contiguous (M,) tensor of {out}; leave
x unchanged. Accumulate in float32. Rows range from a few elements to tens of thousands (a row
may not fit in one block), and N is often not a power of two. {extra}
"""),
        reference=reference,
        make_inputs=_rows if not offset else
        (lambda c, s: {"x": s.tensor((c["m"], c["n"]), c["dtype"], offset=offset)}),
        shapes=_row_shapes(min_n, ties),
        dtypes=("float32", "float16", "bfloat16"),
        flops=lambda c: c["m"] * flops(c["n"]),
        bytes=lambda c: c["m"] * c["n"] * elem_size(c["dtype"]) + c["m"] * elem_size(out_dtype or c["dtype"]),
        tolerances={"float32": fp32, "float16": fp16, "bfloat16": bf16, "int64": EXACT},
        distributions=distributions,
    ))


row_reduce("sum-rows", "sum_rows", "Sum, as x.sum(dim=-1)", lambda x: x.sum(dim=-1),
           fp32=Tolerance(5e-3, 1e-5, 1e-5, "fp32 sums of up to 4M terms (a bench row): a blocked sum is "
                          "~2e-3 off (H200); the relative L2 bound still fails half-precision accumulation"),
           distributions=("normal", "uniform", "outliers"),
           extra="Half-precision sums stay in range (no overflow).")
row_reduce("amax", "amax", "Maximum, as torch.amax(x, dim=-1)", lambda x: torch.amax(x, dim=-1),
           fp32=EXACT, fp16=EXACT, bf16=EXACT, extra="The result is exactly one of the inputs.")
row_reduce("amin", "amin", "Minimum, as torch.amin(x, dim=-1)", lambda x: torch.amin(x, dim=-1),
           fp32=EXACT, fp16=EXACT, bf16=EXACT, extra="The result is exactly one of the inputs.")
row_reduce("argmax", "argmax", "Index of the maximum, as torch.argmax(x, dim=-1)",
           lambda x: torch.argmax(x, dim=-1), fp32=EXACT, fp16=EXACT, bf16=EXACT, out_dtype="int64",
           distributions=("normal", "uniform", "outliers"),
           extra="When several elements equal the maximum, return the smallest index (half-precision rows "
                 "have ties, and some rows hold the maximum many times over their whole length).", ties=True)
row_reduce("argmin", "argmin", "Index of the minimum, as torch.argmin(x, dim=-1)",
           lambda x: torch.argmin(x, dim=-1), fp32=EXACT, fp16=EXACT, bf16=EXACT, out_dtype="int64",
           distributions=("normal", "uniform", "outliers"),
           extra="When several elements equal the minimum, return the smallest index (half-precision rows "
                 "have ties, and some rows hold the minimum many times over their whole length).", ties=True)
row_reduce("var", "var", "Unbiased variance, as torch.var(x, dim=-1) (divide by N - 1)",
           lambda x: torch.var(x, dim=-1), flops=lambda n: 4 * n + 2, min_n=2,
           fp32=TWO_PASS,
           offset=100.0, extra="N >= 2. " + LARGE_MEAN)
row_reduce("std", "std", "Population standard deviation, as torch.std(x, dim=-1, correction=0) (divide by N)",
           lambda x: torch.std(x, dim=-1, correction=0), flops=lambda n: 4 * n + 3,
           fp32=TWO_PASS,
           offset=100.0, extra="N = 1 gives 0. " + LARGE_MEAN)
row_reduce("logsumexp", "logsumexp", "Log-sum-exp, as torch.logsumexp(x, dim=-1)",
           lambda x: torch.logsumexp(x, dim=-1), flops=lambda n: 4 * n + 2,
           fp32=Tolerance(1e-5, 1e-5, 1e-5, "max + log(sum exp(x - max)) in fp32: a few ulps of O(10-500) "
                          "values"),
           extra="Rows hold values around 50 and outliers up to several hundred, where exp overflows "
                 "without subtracting the row maximum.")
row_reduce("l2-norm", "l2_norm", "Euclidean norm, as torch.linalg.vector_norm(x, dim=-1)",
           # reshape: torch 2.11 on the H200 gave shape (M, 1) for N == 1 (the dimension not removed)
           lambda x: torch.linalg.vector_norm(x, dim=-1).reshape(x.shape[:-1]), flops=lambda n: 2 * n + 1,
           fp32=Tolerance(1e-5, 1e-5, 1e-5, "a sum of positive squares in fp32 and one sqrt: ~1e-6 relative"),
           extra="Squares of half-precision values overflow half precision: square and add in float32.")


# ---------------------------------------------------------------------------------- other layouts


register(Task(
    id="reduce/sum-cols",
    entrypoint="sum_cols",
    signature="def sum_cols(x: torch.Tensor) -> torch.Tensor",
    description="""
Column sums, as x.sum(dim=0): x is a contiguous (M, N) tensor of float32, float16 or bfloat16;
out[j] = sum_i x[i, j], a new (N,) tensor of x's dtype. Leave x unchanged; accumulate in float32.
Consecutive j are adjacent in memory, so a program should own a block of columns and walk down
the rows (M reaches tens of thousands). Half-precision sums stay in range.
""",
    reference=lambda x: x.sum(dim=0),
    make_inputs=_rows,
    shapes={
        "dev": [_case(100, 4, "float32"), _case(1000, 48, "float16"), _case(300, 64, "bfloat16")],
        "heldout": [_case(1, 7, "float32"), _case(3001, 17, "float32"), _case(20000, 3, "float32"),
                    _case(781, 130, "float16"), _case(4099, 9, "bfloat16")],
        "bench": [_case(16384, 16384, "float32"), _case(65536, 4096, "bfloat16"),
                  _case(1 << 22, 64, "float32")],
    },
    dtypes=("float32", "float16", "bfloat16"),
    flops=lambda c: c["m"] * c["n"],
    bytes=lambda c: (c["m"] * c["n"] + c["n"]) * elem_size(c["dtype"]),
    tolerances={
        "float32": Tolerance(1e-3, 1e-5, 1e-4, "fp32 sums of up to 2e4 terms of up to ~500: reordering moved "
                             "a sum of 7.5 by 3e-4 on outlier inputs; columns whose sum cancels need the "
                             "absolute part"),
        "float16": FP16_SUM, "bfloat16": BF16_SUM,
    },
    distributions=("normal", "uniform", "outliers"),
))


def _mean_middle_inputs(c: Any, s: Any) -> dict[str, Any]:
    return {"x": s.tensor((c["b"], c["m"], c["n"]), c["dtype"])}


def _bmn(b: int, m: int, n: int, dtype: str) -> dict[str, Any]:
    return {"b": b, "m": m, "n": n, "dtype": dtype}


register(Task(
    id="reduce/mean-middle",
    entrypoint="mean_middle",
    signature="def mean_middle(x: torch.Tensor) -> torch.Tensor",
    description="""
Mean over the middle dimension of a 3-D tensor, as x.mean(dim=1): x is a contiguous (B, M, N)
tensor of float32, float16 or bfloat16; out[b, j] = (1/M) sum_i x[b, i, j], a new (B, N) tensor of
x's dtype. Leave x unchanged; accumulate in float32. Shapes range from (1, 1, N) to M in the
thousands with small N (sequence pooling).
""",
    reference=lambda x: x.mean(dim=1),
    make_inputs=_mean_middle_inputs,
    shapes={
        "dev": [_bmn(2, 100, 8, "float32"), _bmn(3, 64, 100, "float16"), _bmn(2, 50, 64, "bfloat16")],
        "heldout": [_bmn(1, 1, 5, "float32"), _bmn(4, 1000, 33, "float32"), _bmn(7, 77, 300, "float16"),
                    _bmn(2, 5000, 3, "float32"), _bmn(3, 129, 65, "bfloat16")],
        "bench": [_bmn(64, 4096, 1024, "float32"), _bmn(32, 8192, 2048, "bfloat16"),
                  _bmn(1024, 256, 1024, "float32")],
    },
    dtypes=("float32", "float16", "bfloat16"),
    flops=lambda c: c["b"] * c["m"] * c["n"] + c["b"] * c["n"],
    bytes=lambda c: (c["b"] * c["m"] * c["n"] + c["b"] * c["n"]) * elem_size(c["dtype"]),
    tolerances={
        "float32": Tolerance(1e-5, 1e-5, 1e-5, "fp32 means of up to 5000 terms: ~1e-6 relative from "
                             "reordering"),
        "float16": FP16_SUM, "bfloat16": BF16_SUM,
    },
    distributions=("normal", "large", "outliers"),
))


register(Task(
    id="reduce/cumsum",
    entrypoint="cumsum",
    signature="def cumsum(x: torch.Tensor) -> torch.Tensor",
    description="""
Inclusive prefix sum along the last dimension, as torch.cumsum(x, dim=-1): x is a contiguous
(M, N) tensor of float32, float16 or bfloat16; out[i, j] = sum_{k <= j} x[i, k], a new (M, N) tensor
of x's dtype. Leave x unchanged; accumulate in float32 (carry the running total across blocks of
a long row in float32 too). N ranges from 1 to tens of thousands; rows with a large mean (about
50) make the running total grow to 1e6, where a half-precision carry loses everything.
""",
    reference=lambda x: torch.cumsum(x, dim=-1),
    make_inputs=_rows,
    shapes={
        "dev": [_case(4, 100, "float32"), _case(16, 1000, "float16"), _case(3, 2048, "bfloat16")],
        "heldout": [_case(5, 1, "float32"), _case(17, 3001, "float32"), _case(64, 781, "float16"),
                    _case(3, 20000, "float32"), _case(9, 4099, "bfloat16")],
        "bench": [_case(16384, 16384, "float32"), _case(32768, 8192, "bfloat16"),
                  _case(64, 1 << 22, "float32")],
    },
    dtypes=("float32", "float16", "bfloat16"),
    flops=lambda c: c["m"] * c["n"],
    bytes=lambda c: 2 * c["m"] * c["n"] * elem_size(c["dtype"]),
    tolerances={
        "float32": Tolerance(1e-2, 1e-5, 1e-5, "fp32 running sums of up to 4M terms (a bench row): a "
                             "blocked scan is ~4e-3 off (H200) where partial sums pass through zero"),
        "float16": Tolerance(2e-3, 1e-2, 2e-3, "fp32 running sum, one rounding to fp16 (4.9e-4 relative)"),
        "bfloat16": BF16_SUM,
    },
    distributions=("normal", "uniform", "large"),
))


register(Task(
    id="reduce/sum-all",
    entrypoint="sum_all",
    signature="def sum_all(x: torch.Tensor) -> torch.Tensor",
    description="""
Sum of every element of a contiguous 1-D tensor x of n elements, as x.sum(): return a new 0-d
tensor (shape ()) of x's dtype (float32, float16 or bfloat16); leave x unchanged. Accumulate in
float32. n ranges from 1 to millions, so one program cannot do it alone: combine partial sums
from many programs (deterministically, or with float32 atomics).
""",
    reference=lambda x: x.sum(),
    make_inputs=lambda c, s: {"x": s.tensor((c["n"],), c["dtype"])},
    shapes={
        "dev": [{"n": 1000, "dtype": "float32"}, {"n": 65536, "dtype": "float16"},
                {"n": 5000, "dtype": "bfloat16"}],
        "heldout": [{"n": 1, "dtype": "float32"}, {"n": 1_000_003, "dtype": "float32"},
                    {"n": 123457, "dtype": "float16"}, {"n": 77777, "dtype": "bfloat16"}],
        # the last: flat offsets past 2^31, where int32 index arithmetic wraps
        "bench": [{"n": 1 << 28, "dtype": "float32"}, {"n": 1 << 29, "dtype": "bfloat16"},
                  {"n": (1 << 31) + 4097, "dtype": "bfloat16"}],
    },
    dtypes=("float32", "float16", "bfloat16"),
    flops=lambda c: c["n"],
    bytes=lambda c: (c["n"] + 1) * elem_size(c["dtype"]),
    tolerances={
        "float32": Tolerance(1e-3, 1e-5, 1e-5, "fp32 sum of up to 1e6 terms: ~1e-4 absolute from the order; "
                             "a sum near zero needs the absolute part"),
        "float16": FP16_SUM, "bfloat16": BF16_SUM,
    },
    distributions=("normal", "uniform", "outliers"),
))
