"""Loss functions, each reduced to a scalar (a 0-d tensor) as PyTorch's default reduction does.

A scalar output needs a reduction across programs: partial sums combined by a second kernel or
by float32 atomics. Inputs cover both branches of every piecewise loss, logits around 50 and
outliers (where a log-sum-exp without the max subtraction overflows), probabilities that round
to exactly 0 or 1, and soft targets.

FLOPs: one per +, -, *, /, comparison/select, exp or log in the per-element formula, plus one
per element for the reduction. Bytes: inputs read once (for a gather, only the gathered
elements and the indices), the scalar written once.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from ..registry import register
from ..spec import Task, Tolerance, elem_size

FP32_MEAN = Tolerance(1e-6, 1e-5, 1e-5, "an fp32 mean of up to 4e5 terms: ~1e-6 relative from the order")
FP16_OUT = Tolerance(1e-3, 1e-2, 2e-3, "fp32 accumulation, one rounding of the scalar to fp16 (4.9e-4)")
BF16_OUT = Tolerance(8e-3, 3e-2, 1e-2, "fp32 accumulation, one rounding of the scalar to bf16 (3.9e-3)")
TOLERANCES = {"float32": FP32_MEAN, "float16": FP16_OUT, "bfloat16": BF16_OUT}
DTYPES = ("float32", "float16", "bfloat16")


def _wrap(text: str) -> str:
    """One paragraph re-flowed to 100 columns: the helpers below assemble descriptions from pieces."""
    return textwrap.fill(" ".join(text.split()), 100)


def _mn(m: int, n: int, dtype: str, **params: Any) -> dict[str, Any]:
    return {"m": m, "n": n, "dtype": dtype, **params}


def _pair_shapes(held: dict[str, Any] | None = None, **params: Any) -> dict[str, list[dict[str, Any]]]:
    hp = {**params, **(held or {})}
    return {
        "dev": [_mn(8, 100, "float32", **params), _mn(33, 257, "float16", **params),
                _mn(16, 512, "bfloat16", **params)],
        "heldout": [_mn(1, 7, "float32", **hp), _mn(127, 1537, "float32", **hp),
                    _mn(7, 3001, "float16", **hp), _mn(65, 2049, "bfloat16", **hp)],
        "bench": [_mn(16384, 16384, "float32", **params), _mn(32768, 16384, "bfloat16", **params)],
    }


def pair_loss(
    name: str, entry: str, formula: str, reference: Callable[..., torch.Tensor], *, flops: int,
    make_inputs: Callable[[Any, Any], dict[str, Any]] | None = None, params: dict[str, float] | None = None,
    held: dict[str, float] | None = None, inputs: tuple[str, str] = ("x", "y"), extra: str = "",
    distributions: tuple[str, ...] = ("normal", "uniform", "outliers"),
) -> Task:
    """A loss between two (M, N) tensors of one dtype, averaged over all M * N elements."""
    a, b = inputs
    params = params or {}
    sig_params = "".join(f", {p}: float" for p in params)

    def default_inputs(c, s):
        return {a: s.tensor((c["m"], c["n"]), c["dtype"]), b: s.tensor((c["m"], c["n"]), c["dtype"]),
                **{p: c[p] for p in params}}

    return register(Task(
        id=f"loss/{name}",
        entrypoint=entry,
        signature=f"def {entry}({a}: torch.Tensor, {b}: torch.Tensor{sig_params}) -> torch.Tensor",
        description=_wrap(f"""
{formula}
{a} and {b} are contiguous (M, N) tensors of one dtype, float32, float16 or bfloat16. Return the mean
over all M * N elements as a new 0-d tensor (shape ()) of that dtype; leave the inputs unchanged.
Accumulate in float32; M * N reaches hundreds of millions, so combine partial sums from many
programs. {extra}
"""),
        reference=reference,
        make_inputs=make_inputs or default_inputs,
        shapes=_pair_shapes(held, **params),
        dtypes=DTYPES,
        flops=lambda c: (flops + 1) * c["m"] * c["n"],
        bytes=lambda c: (2 * c["m"] * c["n"] + 1) * elem_size(c["dtype"]),
        tolerances=TOLERANCES,
        distributions=distributions,
    ))


pair_loss("mse", "mse_loss", "Mean squared error, as torch.nn.functional.mse_loss(x, y): mean((x - y)^2).",
          lambda x, y: F.mse_loss(x, y), flops=3)
pair_loss("l1", "l1_loss", "Mean absolute error, as torch.nn.functional.l1_loss(x, y): mean(|x - y|).",
          lambda x, y: F.l1_loss(x, y), flops=2)
pair_loss("smooth-l1", "smooth_l1_loss",
          "Smooth L1, as torch.nn.functional.smooth_l1_loss(x, y, beta=beta): with d = x - y, each term is "
          "0.5 * d^2 / beta where |d| < beta, else |d| - 0.5 * beta; beta > 0 is a Python float.",
          lambda x, y, beta: F.smooth_l1_loss(x, y, beta=beta), flops=6,
          params={"beta": 0.5}, held={"beta": 2.0})
pair_loss("huber", "huber_loss",
          "Huber loss, as torch.nn.functional.huber_loss(x, y, delta=delta): with d = x - y, each term is "
          "0.5 * d^2 where |d| <= delta, else delta * (|d| - 0.5 * delta); delta > 0 is a Python float.",
          lambda x, y, delta: F.huber_loss(x, y, delta=delta), flops=6,
          params={"delta": 1.5}, held={"delta": 0.3})


def _bce_inputs(c: Any, s: Any) -> dict[str, Any]:
    dtype = getattr(torch, c["dtype"])
    shape = (c["m"], c["n"])
    return {"p": torch.sigmoid(s.tensor(shape, "float32", scale=4.0)).to(dtype),
            "target": s.uniform(shape, 0.0, 1.0, dtype)}


pair_loss("bce", "bce_loss",
          "Binary cross-entropy on probabilities, as torch.nn.functional.binary_cross_entropy(p, target): "
          "-(target * log(p) + (1 - target) * log(1 - p)), with each log clamped to >= -100 as PyTorch "
          "does.",
          lambda p, target: F.binary_cross_entropy(p, target), flops=8, make_inputs=_bce_inputs,
          inputs=("p", "target"),
          extra="p is in [0, 1] and includes exact 0s and 1s (saturated sigmoids), where the clamp decides; "
                "targets are soft, in [0, 1].")


def _bce_logits_inputs(c: Any, s: Any) -> dict[str, Any]:
    shape = (c["m"], c["n"])
    return {"x": s.tensor(shape, c["dtype"], scale=3.0), "target": s.uniform(shape, 0.0, 1.0, c["dtype"])}


pair_loss("bce-with-logits", "bce_with_logits_loss",
          "Binary cross-entropy on logits, as "
          "torch.nn.functional.binary_cross_entropy_with_logits(x, target): each term is\n"
          "-(target * log(sigmoid(x)) + (1 - target) * log(1 - sigmoid(x))).",
          lambda x, target: F.binary_cross_entropy_with_logits(x, target), flops=7,
          make_inputs=_bce_logits_inputs, inputs=("x", "target"),
          extra="Logits reach several hundred in magnitude: use the stable form "
                "max(x, 0) - x * target + log(1 + exp(-|x|)). Targets are soft, in [0, 1].")


# ---------------------------------------------------------------------------------- row losses (N, C)


def _nc(n: int, c: int, dtype: str) -> dict[str, Any]:
    return {"n": n, "c": c, "dtype": dtype}


ROW_SHAPES = {
    "dev": [_nc(8, 100, "float32"), _nc(33, 1000, "float16"), _nc(4, 512, "bfloat16")],
    "heldout": [_nc(1, 7, "float32"), _nc(17, 5000, "float32"), _nc(40, 3001, "float16"),
                _nc(9, 4099, "bfloat16"),
                # more classes than a 64K block holds: a kernel must combine blocks (rescaling what it summed)
                _nc(2, 70001, "float32")],
    "bench": [_nc(8192, 32768, "float32"), _nc(16384, 32768, "bfloat16")],
}


def _ce_inputs(c: Any, s: Any) -> dict[str, Any]:
    return {"logits": s.tensor((c["n"], c["c"]), c["dtype"]), "target": s.randint(0, c["c"], (c["n"],))}


register(Task(
    id="loss/cross-entropy",
    entrypoint="cross_entropy",
    signature="def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor",
    description="""
Cross-entropy over classes, as torch.nn.functional.cross_entropy(logits, target): logits is a
contiguous (N, C) tensor of float32, float16 or bfloat16, target an (N,) int64 tensor of class
indices in [0, C). loss = mean_i (logsumexp(logits[i, :]) - logits[i, target[i]]). Return a new
0-d tensor of the logits' dtype; leave the inputs unchanged. Accumulate in float32. C reaches
vocabulary sizes (32768), so a row may not fit in one block; logits around 50 and outliers up to
several hundred overflow exp without the max subtraction. C goes past 65536 (more than one block of
64K classes).
""",
    reference=lambda logits, target: F.cross_entropy(logits, target),
    make_inputs=_ce_inputs,
    shapes=ROW_SHAPES,
    dtypes=DTYPES,
    flops=lambda c: c["n"] * (4 * c["c"] + 3),
    bytes=lambda c: c["n"] * c["c"] * elem_size(c["dtype"]) + 8 * c["n"] + elem_size(c["dtype"]),
    tolerances={**TOLERANCES, "float32": Tolerance(1e-5, 1e-5, 1e-5, "log-sum-exp in fp32 of O(50) logits: "
                                                   "a few ulps of each row's loss")},
    distributions=("normal", "large", "outliers"),
))


def _nll_inputs(c: Any, s: Any) -> dict[str, Any]:
    logp = torch.log_softmax(s.tensor((c["n"], c["c"]), "float32", scale=2.0), dim=-1)
    return {"log_probs": logp.to(getattr(torch, c["dtype"])), "target": s.randint(0, c["c"], (c["n"],))}


register(Task(
    id="loss/nll",
    entrypoint="nll_loss",
    signature="def nll_loss(log_probs: torch.Tensor, target: torch.Tensor) -> torch.Tensor",
    description="""
Negative log-likelihood, as torch.nn.functional.nll_loss(log_probs, target): log_probs is a
contiguous (N, C) tensor of float32, float16 or bfloat16 (log-softmax outputs), target an (N,) int64
tensor of class indices in [0, C). loss = -mean_i log_probs[i, target[i]]. Return a new 0-d tensor
of log_probs' dtype; leave the inputs unchanged. Only N elements need reading: a gather, not a
pass over the matrix. N reaches tens of millions, so combine partial sums from many programs.
""",
    reference=lambda log_probs, target: F.nll_loss(log_probs, target),
    make_inputs=_nll_inputs,
    shapes={
        "dev": [_nc(8, 100, "float32"), _nc(333, 50, "float16"), _nc(64, 512, "bfloat16")],
        "heldout": [_nc(1, 1, "float32"), _nc(10007, 17, "float32"), _nc(2000, 3001, "float16"),
                    _nc(500, 1001, "bfloat16")],
        "bench": [_nc(1 << 26, 4, "float32"), _nc(1 << 25, 16, "bfloat16")],
    },
    dtypes=DTYPES,
    flops=lambda c: c["n"] + 1,
    bytes=lambda c: c["n"] * (8 + elem_size(c["dtype"])) + elem_size(c["dtype"]),
    tolerances=TOLERANCES,
    distributions=("normal", "uniform"),
))


def _kl_inputs(c: Any, s: Any) -> dict[str, Any]:
    dtype = getattr(torch, c["dtype"])
    shape = (c["n"], c["c"])
    return {"input": torch.log_softmax(s.tensor(shape, "float32", scale=2.0), dim=-1).to(dtype),
            "target": torch.softmax(s.tensor(shape, "float32", scale=2.0), dim=-1).to(dtype)}


register(Task(
    id="loss/kl-div",
    entrypoint="kl_div",
    signature="def kl_div(input: torch.Tensor, target: torch.Tensor) -> torch.Tensor",
    description="""
KL divergence, as torch.nn.functional.kl_div(input, target, reduction='batchmean'): input holds
log-probabilities and target probabilities, both contiguous (N, C) tensors of one dtype, float32,
float16 or bfloat16. loss = (1/N) sum_{i,j} target[i, j] * (log(target[i, j]) - input[i, j]), where a
term with target = 0 counts 0 (half-precision targets underflow to exact zeros). Return a new 0-d
tensor of that dtype; leave the inputs unchanged. Accumulate in float32.
""",
    reference=lambda input, target: F.kl_div(input, target, reduction="batchmean"),
    make_inputs=_kl_inputs,
    shapes=ROW_SHAPES,
    dtypes=DTYPES,
    flops=lambda c: 5 * c["n"] * c["c"] + 1,
    bytes=lambda c: (2 * c["n"] * c["c"] + 1) * elem_size(c["dtype"]),
    tolerances={**TOLERANCES, "float32": Tolerance(1e-6, 2e-5, 2e-5, "an fp32 sum of terms of both signs "
                                                   "(target log target - target input); some cancel")},
    distributions=("normal", "uniform", "outliers"),
))


def _multi_margin_inputs(c: Any, s: Any) -> dict[str, Any]:
    return {"x": s.tensor((c["n"], c["c"]), c["dtype"]), "target": s.randint(0, c["c"], (c["n"],)),
            "margin": c["margin"]}


def _multi_margin_reference(x: torch.Tensor, target: torch.Tensor, margin: float = 1.0) -> torch.Tensor:
    """PyTorch's CPU kernel has no half-precision version: compute at least in float32, return x's dtype."""
    wide = x.to(torch.promote_types(x.dtype, torch.float32))
    return F.multi_margin_loss(wide, target, margin=margin).to(x.dtype)


def _nc_m(n: int, c: int, dtype: str, margin: float) -> dict[str, Any]:
    return {"n": n, "c": c, "dtype": dtype, "margin": margin}


register(Task(
    id="loss/multi-margin",
    entrypoint="multi_margin_loss",
    signature=("def multi_margin_loss(x: torch.Tensor, target: torch.Tensor, margin: float = 1.0) "
               "-> torch.Tensor"),
    description="""
Multi-class hinge loss, as torch.nn.functional.multi_margin_loss(x, target, margin=margin) (p=1, no
weights): x is a contiguous (N, C) tensor of float32, float16 or bfloat16 scores, target an (N,)
int64 tensor of class indices in [0, C), margin a Python float. For row i with y = target[i]:
loss_i = (1/C) sum_{j != y} max(0, margin - x[i, y] + x[i, j]); return mean_i loss_i as a new 0-d
tensor of x's dtype. Leave the inputs unchanged; accumulate in float32.
""",
    reference=_multi_margin_reference,
    make_inputs=_multi_margin_inputs,
    shapes={
        "dev": [_nc_m(8, 100, "float32", 1.0), _nc_m(33, 1000, "float16", 1.0),
                _nc_m(4, 512, "bfloat16", 1.0)],
        "heldout": [_nc_m(1, 7, "float32", 0.5), _nc_m(17, 5000, "float32", 0.5),
                    _nc_m(40, 3001, "float16", 2.0), _nc_m(9, 4099, "bfloat16", 0.5)],
        "bench": [_nc_m(8192, 32768, "float32", 1.0), _nc_m(16384, 32768, "bfloat16", 1.0)],
    },
    dtypes=DTYPES,
    flops=lambda c: 4 * c["n"] * c["c"] + 2 * c["n"],
    bytes=lambda c: c["n"] * c["c"] * elem_size(c["dtype"]) + 8 * c["n"] + elem_size(c["dtype"]),
    tolerances=TOLERANCES,
    distributions=("normal", "uniform", "outliers"),
))


def _cosine_inputs(c: Any, s: Any) -> dict[str, Any]:
    dtype = getattr(torch, c["dtype"])
    shape = (c["n"], c["c"])
    x1 = s.tensor(shape, "float32")
    mix = s.uniform((c["n"], 1), -1.0, 1.0)
    x2 = mix * x1 + s.tensor(shape, "float32") * 0.6
    y = s.randint(0, 2, (c["n"],)) * 2 - 1
    return {"x1": x1.to(dtype), "x2": x2.to(dtype), "y": y, "margin": c["margin"]}


register(Task(
    id="loss/cosine-embedding",
    entrypoint="cosine_embedding_loss",
    signature=("def cosine_embedding_loss(x1: torch.Tensor, x2: torch.Tensor, y: torch.Tensor, "
               "margin: float = 0.0) -> torch.Tensor"),
    description="""
Cosine embedding loss, as torch.nn.functional.cosine_embedding_loss(x1, x2, y, margin=margin):
x1 and x2 are contiguous (N, D) tensors of one dtype (float32, float16 or bfloat16), y an (N,) int64
tensor of +1 / -1 labels, margin a Python float. With
cos_i = sum_d x1[i,d] x2[i,d] / sqrt((sum_d x1[i,d]^2 + 1e-12) * (sum_d x2[i,d]^2 + 1e-12)),
loss_i = 1 - cos_i where y[i] = 1 and max(0, cos_i - margin) where y[i] = -1; return mean_i loss_i
as a new 0-d tensor of the inputs' dtype. Leave the inputs unchanged; accumulate in float32.
""",
    reference=lambda x1, x2, y, margin=0.0: F.cosine_embedding_loss(x1, x2, y, margin=margin),
    make_inputs=_cosine_inputs,
    shapes={
        "dev": [_nc_m(8, 100, "float32", 0.1), _nc_m(33, 1000, "float16", 0.1),
                _nc_m(4, 512, "bfloat16", 0.1)],
        "heldout": [_nc_m(1, 7, "float32", -0.2), _nc_m(17, 5000, "float32", 0.3),
                    _nc_m(40, 3001, "float16", -0.2), _nc_m(9, 4099, "bfloat16", 0.3)],
        "bench": [_nc_m(65536, 4096, "float32", 0.1), _nc_m(131072, 4096, "bfloat16", 0.1)],
    },
    dtypes=DTYPES,
    flops=lambda c: 6 * c["n"] * c["c"] + 8 * c["n"],
    bytes=lambda c: 2 * c["n"] * c["c"] * elem_size(c["dtype"]) + 8 * c["n"] + elem_size(c["dtype"]),
    tolerances=TOLERANCES,
    distributions=("normal", "uniform", "outliers"),
))


def _ranking_inputs(c: Any, s: Any) -> dict[str, Any]:
    dtype = getattr(torch, c["dtype"])
    y = (s.randint(0, 2, (c["n"],)) * 2 - 1).to(dtype)
    return {"x1": s.tensor((c["n"],), c["dtype"]), "x2": s.tensor((c["n"],), c["dtype"]), "y": y,
            "margin": c["margin"]}


def _n_m(n: int, dtype: str, margin: float) -> dict[str, Any]:
    return {"n": n, "dtype": dtype, "margin": margin}


register(Task(
    id="loss/margin-ranking",
    entrypoint="margin_ranking_loss",
    signature=("def margin_ranking_loss(x1: torch.Tensor, x2: torch.Tensor, y: torch.Tensor, "
               "margin: float = 0.0) -> torch.Tensor"),
    description="""
Margin ranking (pairwise hinge) loss, as torch.nn.functional.margin_ranking_loss(x1, x2, y,
margin=margin): x1, x2 and y are contiguous 1-D tensors of n elements and one dtype (float32,
float16 or bfloat16); y holds +1 or -1; margin is a Python float.
loss = mean_i max(0, -y[i] * (x1[i] - x2[i]) + margin), returned as a new 0-d tensor of that dtype.
Leave the inputs unchanged; accumulate in float32. n reaches hundreds of millions.
""",
    reference=lambda x1, x2, y, margin=0.0: F.margin_ranking_loss(x1, x2, y, margin=margin),
    make_inputs=_ranking_inputs,
    shapes={
        "dev": [_n_m(1000, "float32", 0.5), _n_m(4097, "float16", 0.5), _n_m(3000, "bfloat16", 0.5)],
        "heldout": [_n_m(1, "float32", 0.0), _n_m(300_007, "float32", 0.25), _n_m(77777, "float16", 1.0),
                    _n_m(12345, "bfloat16", 0.25)],
        "bench": [_n_m(1 << 28, "float32", 0.5), _n_m(1 << 29, "bfloat16", 0.5)],
    },
    dtypes=DTYPES,
    flops=lambda c: 5 * c["n"],
    bytes=lambda c: (3 * c["n"] + 1) * elem_size(c["dtype"]),
    tolerances=TOLERANCES,
    distributions=("normal", "uniform", "outliers"),
))
