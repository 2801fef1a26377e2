"""Random-number kernels: dropout, Bernoulli masks, uniform/normal/integer fills, stochastic rounding.

Their outputs cannot be compared with a reference element by element, so each task has a ``check``
that tests what a constant, a wrong rate or a badly seeded generator cannot fake: values in the
right set, counts and moments within six standard deviations of their expectation, and no
correlation between elements a power of two (or a row) apart; continuous outputs also match their target
distribution (a Kolmogorov-Smirnov distance) and repeat values no more often than their dtype's rounding
makes them, which a generator of a few random bits per element cannot fake. The evaluator adds the rest:
it runs every case twice (same seed, same output) and under four seeds that differ in single bits
(different outputs).

The non-seed inputs (x, probs, ...) are drawn from a sampler whose seed is FIXED within an evaluation, so
they are the same under every seed: a kernel that ignores ``seed`` then returns identical outputs and is
caught.
"""

from __future__ import annotations

import math
import random
import textwrap
import zlib

import torch

from ..randomness import (
    bernoulli_problem,
    count_problem,
    distribution_problem,
    half_cell,
    lag_problem,
    repetition_problem,
)
from ..registry import register
from ..sampling import Sampler
from ..spec import Task, Tolerance, elem_size

_FIXED_INPUT_SEED = 0x5EED
_SEED_RANGE = (1, 2**31 - 1)
_SEEDS = (0, 1, 2, 3)
"""The judge's seeds for every case. Under them the kernel gets the case's own base seed with no bit, bit
0, one of bits 1-15 and one of bits 16-30 flipped (the last two chosen per case), and the evaluator
compares the outputs of every pair: a generator keyed on part of the seed (its lowest bit, its low 8 or
16 bits, seed >> 1, a float32 copy of it) gives two of them the same output."""
_SEED_BIT_RANGES = ((0, 1), (1, 16), (16, 31))

_NOT_COMPARED = {
    d: Tolerance(0.0, 0.0, 0.0, "not compared with a reference: judged by the task's statistical check")
    for d in ("float32", "float16", "bfloat16", "int64")
}
_NO_BASELINES: tuple[str, ...] = ()
"""The references below only allocate (a check judges the output): timing one as "eager" or
"torch.compile" would time an allocation (0.00x "speedups" on the H200)."""
_ULP = {torch.float32: 2.0**-21, torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7}
"""Relative slack for a value computed in fp32 and rounded once to the output dtype (two ulps for fp32)."""
_FP32_STEPS = 2.0**-21
"""Float32 arithmetic before the output is rounded moves a value by a few of its ulps (2^-24 relative)."""

_JUDGED = """
How it is judged (no element-by-element reference exists):
- the same seed must give the same output, and another seed another output (the evaluator runs each case
  twice, and under four seeds that differ from one another in one or two bits);
{what}
- elements a power of two apart (1, 2, 4, ...) or one row apart must be uncorrelated.
Counts and moments must lie within 6 standard deviations of their expectation. Triton's counter-based
generator does all this when every element gets its own offset: tl.rand(seed, offsets) / tl.randn /
tl.randint with offsets unique over the whole tensor (not restarting per program or per row).
"""


def _judged(what: str) -> str:
    bullet = textwrap.fill(what + ";", width=104, initial_indent="- ", subsequent_indent="  ")
    return _JUDGED.format(what=bullet)


def _fixed(s: Sampler) -> Sampler:
    """The same under every seed of one evaluation, and another in another evaluation (``Sampler.salt``)."""
    return Sampler(_FIXED_INPUT_SEED ^ s.salt, s.dist, s.device)


def _seed(s: Sampler, case) -> int:
    """The kernel's seed: see ``_SEEDS`` (the roles, ``Sampler.role``; the base seed is the case's, mixed
    with the evaluation's ``Sampler.salt``); a fresh draw under any other judge seed (the late re-checks)."""
    if s.role not in _SEEDS:
        return s.integer(*_SEED_RANGE)
    rng = random.Random(zlib.crc32(repr(sorted(case.items())).encode()) ^ s.salt)
    base = 0
    while bin(base).count("1") < 2:  # no flip of one bit can give 0
        base = rng.randrange(*_SEED_RANGE)
    flips = [0] + [1 << rng.randrange(lo, hi) for lo, hi in _SEED_BIT_RANGES]
    return base ^ flips[_SEEDS.index(s.role)]


def _rows(m: int, n: int, dtype: str, **extra) -> dict:
    return {"m": m, "n": n, "dtype": dtype, **extra}


def _numel(c) -> int:
    return c["m"] * c["n"]


# --------------------------------------------------------------------------------------- statistics
def _tensor_problem(out, shape, dtype: torch.dtype) -> str | None:
    if not isinstance(out, torch.Tensor):
        return f"returned {type(out).__name__}; expected one tensor"
    if tuple(out.shape) != tuple(shape):
        return f"output has shape {tuple(out.shape)}; expected {tuple(shape)}"
    if out.dtype != dtype:
        return f"output has dtype {out.dtype}; expected {dtype}"
    if out.is_floating_point() and not bool(torch.isfinite(out).all()):
        return "output holds NaN or infinite values"
    return None


def _eps(dtype: torch.dtype) -> float:
    """Relative spacing of the output dtype: rounding to it moves a value by at most half of this."""
    return torch.finfo(dtype).eps


def _subnormal(dtype: torch.dtype) -> float:
    info = torch.finfo(dtype)
    return info.tiny * info.eps


# ------------------------------------------------------------------------------------------ dropout
def _dropout_inputs(case, s):
    x = _fixed(s).tensor((case["m"], case["n"]), case["dtype"])
    return {"x": x, "p": case["p"], "seed": _seed(s, case)}


def _dropout_check(out, inputs, case) -> str | None:
    x, p = inputs["x"], inputs["p"]
    problem = _tensor_problem(out, x.shape, x.dtype)
    if problem:
        return problem
    o = out.flatten().to(torch.float64)
    want = x.flatten().to(torch.float64) / (1.0 - p)
    kept = o != 0
    wrong = kept & ((o - want).abs() > _ULP[x.dtype] * want.abs() + _subnormal(x.dtype))
    if bool(wrong.any()):
        i = int(wrong.nonzero()[0])
        return (f"element {i} is {float(o[i]):.6g}; a dropped element must be 0 and a kept one x / (1 - p) = "
                f"{float(want[i]):.6g}")
    return bernoulli_problem("kept elements", kept, 1.0 - p, case["n"])


_DROPOUT_SHAPES = {
    "dev": [_rows(32, 1000, "float32", p=0.1), _rows(16, 2048, "float16", p=0.5),
            _rows(16, 1024, "bfloat16", p=0.3)],
    "heldout": [_rows(7, 333, "float32", p=0.9), _rows(65, 1000, "float16", p=0.2),
                _rows(3, 4097, "float32", p=0.5), _rows(8, 512, "bfloat16", p=0.1)],
    "bench": [_rows(16384, 16384, "bfloat16", p=0.1), _rows(16384, 16384, "float16", p=0.1),
              _rows(8192, 16384, "float32", p=0.1)],
}

register(Task(
    id="random/dropout",
    entrypoint="dropout",
    signature="def dropout(x: torch.Tensor, p: float, seed: int) -> torch.Tensor",
    description="""
Dropout in training mode: x is a contiguous (M, N) tensor (float32, float16 or bfloat16), p a float in
[0.1, 0.9] and seed an int in [1, 2^31). Each element is independently dropped with probability p
(out = 0) or kept with probability 1 - p (out = x / (1 - p), computed in float32 and rounded to x's
dtype). The draw depends only on (seed, element index): the same seed gives the same output. Return a
new tensor of x's shape and dtype.
""" + _judged("every element must be 0 or x / (1 - p) (to rounding), and the fraction kept "
                     "must match 1 - p"),
    reference=lambda x, p, seed: torch.empty_like(x),
    make_inputs=_dropout_inputs,
    shapes=_DROPOUT_SHAPES,
    dtypes=("float32", "float16", "bfloat16"),
    tolerances=_NOT_COMPARED,
    flops=lambda c: 2 * _numel(c),
    bytes=lambda c: 2 * _numel(c) * elem_size(c["dtype"]),
    distributions=("normal",),
    seeds=_SEEDS,
    check=_dropout_check,
    baselines=_NO_BASELINES,
    notes="Judged statistically (see the description); no element-wise tolerance applies.",
))


# --------------------------------------------------------------------------------- dropout + residual
def _dropout_add_inputs(case, s):
    fixed = _fixed(s)
    shape = (case["m"], case["n"])
    return {"x": fixed.tensor(shape, case["dtype"]), "residual": fixed.tensor(shape, case["dtype"]),
            "p": case["p"], "seed": _seed(s, case)}


def _dropout_add_check(out, inputs, case) -> str | None:
    x, r, p = inputs["x"], inputs["residual"], inputs["p"]
    problem = _tensor_problem(out, x.shape, x.dtype)
    if problem:
        return problem
    o = out.flatten().to(torch.float64)
    rv = r.flatten().to(torch.float64)
    xs = x.flatten().to(torch.float64) / (1.0 - p)
    ulp = _ULP[x.dtype]
    kept = o != rv
    # A kept element is residual + x / (1 - p), rounded (fp32 intermediate, then the output dtype).
    wrong = kept & ((o - (rv + xs)).abs() > ulp * (rv.abs() + xs.abs()) + _subnormal(x.dtype))
    if bool(wrong.any()):
        i = int(wrong.nonzero()[0])
        return (f"element {i} is {float(o[i]):.6g}; it must be residual = {float(rv[i]):.6g} (dropped) or "
                f"residual + x / (1 - p) = {float(rv[i] + xs[i]):.6g} (kept)")
    # Where x / (1 - p) is below the rounding of the residual, kept and dropped look alike: leave those out.
    clear = xs.abs() > 4 * ulp * rv.abs() + 4 * _subnormal(x.dtype)
    return bernoulli_problem("kept elements", kept, 1.0 - p, case["n"], valid=clear)


register(Task(
    id="random/dropout-add",
    entrypoint="dropout_add",
    signature="def dropout_add(x: torch.Tensor, residual: torch.Tensor, p: float, seed: int) -> torch.Tensor",
    description="""
Dropout fused with a residual add (the end of a transformer sub-block): x and residual are contiguous
(M, N) tensors of one dtype (float32, float16 or bfloat16), p a float in [0.1, 0.9], seed an int in
[1, 2^31). out = residual + dropout(x): each element of x is independently dropped with probability p
(out = residual exactly) or kept (out = residual + x / (1 - p), computed in float32 and rounded once to
the dtype). The draw depends only on (seed, element index). Return a new (M, N) tensor.
""" + _judged("every element must be residual or residual + x / (1 - p) (to rounding), and "
                     "the fraction kept must match 1 - p"),
    reference=lambda x, residual, p, seed: torch.empty_like(x),
    make_inputs=_dropout_add_inputs,
    shapes=_DROPOUT_SHAPES,
    dtypes=("float32", "float16", "bfloat16"),
    tolerances=_NOT_COMPARED,
    flops=lambda c: 3 * _numel(c),
    bytes=lambda c: 3 * _numel(c) * elem_size(c["dtype"]),
    distributions=("normal",),
    seeds=_SEEDS,
    check=_dropout_add_check,
    baselines=_NO_BASELINES,
    notes="Judged statistically (see the description); no element-wise tolerance applies.",
))


# ---------------------------------------------------------------------------------------- bernoulli
_BLOCK_PROBS = (0.02, 0.97)
"""Probabilities held by a block of 1/8 of the elements each. Compared with a random number of 4 bits
(16 levels), p = 0.02 never fires and 0.97 always does, which counts over tenths of [0, 1] average out."""


def _bernoulli_inputs(case, s):
    probs = _fixed(s).uniform((case["m"], case["n"]), 0.02, 0.98, case["dtype"])
    probs[0, :7] = 0.0  # certain outcomes: 0 must give 0 and 1 must give 1, every time
    probs[-1, -7:] = 1.0
    flat, n = probs.view(-1), probs.numel()
    for k, q in enumerate(_BLOCK_PROBS):  # constant blocks: a coarse comparison shows at one probability
        flat[(2 + 2 * k) * n // 16:(4 + 2 * k) * n // 16] = q
    return {"probs": probs, "seed": _seed(s, case)}


def _bernoulli_check(out, inputs, case) -> str | None:
    probs = inputs["probs"]
    problem = _tensor_problem(out, probs.shape, probs.dtype)
    if problem:
        return problem
    o = out.flatten().to(torch.float64)
    p = probs.flatten().to(torch.float64)
    if not bool(((o == 0) | (o == 1)).all()):
        i = int((~((o == 0) | (o == 1))).nonzero()[0])
        return f"element {i} is {float(o[i]):.6g}; every element must be exactly 0 or 1"
    certain = (p == 0) | (p == 1)
    if bool((o[certain] != p[certain]).any()):
        return "an element with probability 0 came out 1, or one with probability 1 came out 0"
    o, p = o[~certain], p[~certain]
    problem = count_problem("the number of ones", float(o.sum()), float(p.sum()), float((p * (1 - p)).sum()))
    if problem:
        return problem
    for lo in torch.linspace(0, 1, 11)[:-1].tolist():
        sel = (p >= lo) & (p < lo + 0.1)
        if bool(sel.any()):
            ps = p[sel]
            problem = count_problem(f"the number of ones among probabilities in [{lo:.1f}, {lo + 0.1:.1f})",
                                     float(o[sel].sum()), float(ps.sum()), float((ps * (1 - ps)).sum()))
            if problem:
                return problem
    for q in _BLOCK_PROBS:
        sel = p == float(torch.tensor(q, dtype=probs.dtype))
        ps = p[sel]
        problem = count_problem(f"the number of ones among the {int(sel.sum())} elements of probability "
                                f"{float(ps[0]):.4g}", float(o[sel].sum()), float(ps.sum()),
                                float((ps * (1 - ps)).sum()))
        if problem:
            return problem
    return lag_problem((o - p) / torch.sqrt(p * (1 - p)), case["n"])


register(Task(
    id="random/bernoulli",
    entrypoint="bernoulli",
    signature="def bernoulli(probs: torch.Tensor, seed: int) -> torch.Tensor",
    description="""
Bernoulli sampling, like torch.bernoulli(probs): probs is a contiguous (M, N) tensor (float32 or float16)
of probabilities in [0, 1] (some exactly 0 or 1) and seed an int in [1, 2^31). out[i, j] = 1 with
probability probs[i, j], else 0, independently per element; an element of probability 0 is always 0 and
one of probability 1 always 1. Return a new tensor of probs' shape and dtype holding exactly 0.0 and 1.0.
""" + _judged("the number of ones must match the sum of the probabilities, overall, within "
                     "each tenth of [0, 1] and among elements of one probability (blocks of constant small "
                     "and large probabilities)"),
    reference=lambda probs, seed: torch.empty_like(probs),
    make_inputs=_bernoulli_inputs,
    shapes={
        "dev": [_rows(32, 1000, "float32"), _rows(16, 2048, "float16"), _rows(8, 999, "float32")],
        "heldout": [_rows(7, 333, "float32"), _rows(65, 1000, "float16"), _rows(3, 4097, "float32")],
        "bench": [_rows(16384, 16384, "float16"), _rows(8192, 16384, "float32")],
    },
    dtypes=("float32", "float16"),
    tolerances=_NOT_COMPARED,
    flops=lambda c: _numel(c),
    bytes=lambda c: 2 * _numel(c) * elem_size(c["dtype"]),
    distributions=("normal",),
    seeds=_SEEDS,
    check=_bernoulli_check,
    baselines=_NO_BASELINES,
    notes="Judged statistically (see the description); no element-wise tolerance applies.",
))


# ---------------------------------------------------------------------------------------- uniform
def _template(case, s) -> torch.Tensor:
    """The shape/dtype/device template of the fill tasks: NaN, so returning it can never pass."""
    dtype = getattr(torch, case["dtype"])
    return torch.full((case["m"], case["n"]), float("nan"), dtype=dtype, device=s.device)


def _like_inputs(case, s):
    return {"x": _template(case, s), "low": case["low"], "high": case["high"], "seed": _seed(s, case)}


def _uniform_check(out, inputs, case) -> str | None:
    x, low, high = inputs["x"], inputs["low"], inputs["high"]
    problem = _tensor_problem(out, x.shape, x.dtype)
    if problem:
        return problem
    u = (out.flatten().to(torch.float64) - low) / (high - low)
    if bool(((u < 0) | (u > 1)).any()):
        i = int(((u < 0) | (u > 1)).nonzero()[0])
        return f"element {i} is {float(out.flatten()[i]):.6g}, outside [low, high] = [{low}, {high}]"
    n = u.numel()
    # Rounding to the output dtype moves a value by up to half a spacing: widen the bounds by that much.
    step = _eps(x.dtype) * max(abs(low), abs(high)) / (high - low)
    problem = count_problem("the mean of (out - low) / (high - low)", float(u.mean()), 0.5, 1 / (12 * n),
                             slack=step / 2)
    if problem:
        return problem
    bins = 16
    idx = (u * bins).floor().clamp(max=bins - 1)
    counts = torch.bincount(idx.to(torch.int64), minlength=bins)
    for b in range(bins):
        problem = count_problem(f"the count in bin {b} of 16 equal bins of [low, high]", float(counts[b]),
                                 n / bins, n / bins * (1 - 1 / bins), slack=2 + n * step)
        if problem:
            return problem
    width = high - low
    problem = distribution_problem("the values", out, lambda v: ((v - low) / width).clamp(0.0, 1.0))
    if problem:
        return problem
    widest = float(half_cell(torch.tensor(max(abs(low), abs(high)), dtype=torch.float64), x.dtype))
    # A value's rounding cell, doubled for the float32 arithmetic before the rounding, over the range.
    cell = (4 * widest + _FP32_STEPS * max(abs(low), abs(high))) / width
    problem = repetition_problem("the values", out, cell)
    if problem:
        return problem
    return lag_problem((u - 0.5) * math.sqrt(12.0), case["n"])


def _u(m, n, dtype, low, high) -> dict:
    return _rows(m, n, dtype, low=low, high=high)


register(Task(
    id="random/uniform",
    entrypoint="uniform_like",
    signature="def uniform_like(x: torch.Tensor, low: float, high: float, seed: int) -> torch.Tensor",
    description="""
Uniform random fill, like torch.empty_like(x).uniform_(low, high): x is a contiguous (M, N) tensor
(float32, float16 or bfloat16) whose values are ignored (it gives the shape, dtype and device and holds
NaN), low < high are floats and seed an int in [1, 2^31). Every element is an independent draw from
U(low, high), computed in float32 and rounded to x's dtype (so high itself may appear through rounding).
Return a new tensor of x's shape and dtype; do not modify x.
""" + _judged("every value must lie in [low, high], their mean must be (low + high) / 2, each "
                     "of 16 equal bins of [low, high] must hold 1/16 of them, their distribution must be "
                     "U(low, high) at the dtype's resolution (Kolmogorov-Smirnov) and values must repeat "
                     "no more often than rounding to the dtype makes them (24 random bits per element do)"),
    reference=lambda x, low, high, seed: torch.empty_like(x),
    make_inputs=_like_inputs,
    shapes={
        "dev": [_u(32, 1000, "float32", 0.0, 1.0), _u(16, 2048, "float16", -1.0, 1.0),
                _u(16, 1024, "bfloat16", -3.0, 5.0)],
        "heldout": [_u(7, 333, "float32", -0.5, 0.5), _u(65, 1000, "float16", 2.0, 10.0),
                    _u(3, 4097, "float32", -100.0, 1.0), _u(8, 512, "bfloat16", 0.0, 1.0)],
        "bench": [_u(16384, 16384, "float32", 0.0, 1.0), _u(16384, 32768, "bfloat16", -1.0, 1.0)],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances=_NOT_COMPARED,
    flops=lambda c: 2 * _numel(c),
    bytes=lambda c: _numel(c) * elem_size(c["dtype"]),
    distributions=("normal",),
    seeds=_SEEDS,
    check=_uniform_check,
    baselines=_NO_BASELINES,
    notes="Judged statistically (see the description); no element-wise tolerance applies.",
))


# ----------------------------------------------------------------------------------------- normal
def _normal_inputs(case, s):
    return {"x": _template(case, s), "mean": case["mean"], "std": case["std"], "seed": _seed(s, case)}


_NORMAL_FRACTIONS = ((0.0, 0.5), (1.0, math.erf(1 / math.sqrt(2))), (2.0, math.erf(2 / math.sqrt(2))),
                     (3.0, math.erf(3 / math.sqrt(2))))
"""(k, P(|z| < k)) for a standard normal z; k = 0 stands for P(z > 0)."""


def _normal_check(out, inputs, case) -> str | None:
    x, mean, std = inputs["x"], inputs["mean"], inputs["std"]
    problem = _tensor_problem(out, x.shape, x.dtype)
    if problem:
        return problem
    z = (out.flatten().to(torch.float64) - mean) / std
    n = z.numel()
    # Spacing of the output dtype around mean + k * std, in units of std: rounding moves values by half of it.
    def step(k: float) -> float:
        return _eps(x.dtype) * (abs(mean) + k * std) / std

    problem = count_problem("the mean of (out - mean) / std", float(z.mean()), 0.0, 1 / n, slack=step(3) / 2)
    if problem:
        return problem
    problem = count_problem("the variance of (out - mean) / std", float(z.var()), 1.0, 2 / (n - 1),
                             slack=3 * step(3))
    if problem:
        return problem
    for k, frac in _NORMAL_FRACTIONS:
        inside = float((z > 0).sum()) if k == 0 else float((z.abs() < k).sum())
        what = "the number of values above the mean" if k == 0 else f"the number of values within {k:g} std"
        problem = count_problem(what, inside, n * frac, n * frac * (1 - frac), slack=2 + n * 0.4 * step(k))
        if problem:
            return problem
    problem = distribution_problem("the values", out, lambda v: torch.special.ndtr((v - mean) / std))
    if problem:
        return problem
    problem = repetition_problem("the values", out, _normal_largest_cell(mean, std, x.dtype))
    if problem:
        return problem
    return lag_problem(z, case["n"])


def _normal_largest_cell(mean: float, std: float, dtype: torch.dtype) -> float:
    """An upper bound on the N(mean, std^2) probability of one value of ``dtype``: its rounding cell,
    doubled for the float32 arithmetic before the rounding, times the largest density over the cell
    (searched over 20 standard deviations; the density past 10 is below 1e-22)."""
    z = torch.linspace(-10.0, 10.0, 20001, dtype=torch.float64)
    x = mean + std * z
    cell = 4 * half_cell(x, dtype) + _FP32_STEPS * (abs(mean) + x.abs())
    nearest = (z.abs() - cell / std).clamp(min=0.0)
    return float((torch.exp(-nearest * nearest / 2) / math.sqrt(2 * math.pi) / std * cell).max())


def _nm(m, n, dtype, mean, std) -> dict:
    return _rows(m, n, dtype, mean=mean, std=std)


register(Task(
    id="random/normal",
    entrypoint="normal_like",
    signature="def normal_like(x: torch.Tensor, mean: float, std: float, seed: int) -> torch.Tensor",
    description="""
Gaussian random fill, like torch.empty_like(x).normal_(mean, std): x is a contiguous (M, N) tensor
(float32, float16 or bfloat16) whose values are ignored (it gives the shape, dtype and device and holds
NaN), mean and std > 0 are floats and seed an int in [1, 2^31). Every element is an independent draw
from N(mean, std^2) (Box-Muller or tl.randn), computed in float32 and rounded to x's dtype. Return a new
tensor of x's shape and dtype; do not modify x.
""" + _judged("the sample mean and variance must match, and so must the fractions of values "
                     "above the mean and within 1, 2 and 3 standard deviations; the distribution must be "
                     "N(mean, std^2) at the dtype's resolution (Kolmogorov-Smirnov) and values must "
                     "repeat no more often than rounding to the dtype makes them"),
    reference=lambda x, mean, std, seed: torch.empty_like(x),
    make_inputs=_normal_inputs,
    shapes={
        "dev": [_nm(32, 1000, "float32", 0.0, 1.0), _nm(16, 2048, "float16", 0.5, 2.0),
                _nm(16, 1024, "bfloat16", -3.0, 5.0)],
        "heldout": [_nm(7, 333, "float32", 0.5, 2.0), _nm(65, 1000, "float16", 0.0, 1.0),
                    _nm(3, 4097, "float32", -100.0, 10.0), _nm(8, 512, "bfloat16", 0.0, 0.02)],
        "bench": [_nm(16384, 16384, "float32", 0.0, 1.0), _nm(16384, 32768, "bfloat16", 0.0, 0.02)],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances=_NOT_COMPARED,
    flops=lambda c: 20 * _numel(c),
    bytes=lambda c: _numel(c) * elem_size(c["dtype"]),
    distributions=("normal",),
    seeds=_SEEDS,
    check=_normal_check,
    baselines=_NO_BASELINES,
    notes="Judged statistically (see the description); no element-wise tolerance applies.",
))


# ------------------------------------------------------------------------------ stochastic rounding
_BLOCK_FRACTIONS = (0.025, 0.975)
"""Fractional parts (of x / scale) held by a block of 1/8 of the elements each. Rounding up when a random
number of 4 bits (16 levels) exceeds 1 - frac never rounds 0.025 up and always rounds 0.975 up, which
counts over tenths of [0, 1) average out."""


def _sround_inputs(case, s):
    x = _fixed(s).tensor((case["m"], case["n"]), "float32", scale=case["spread"])
    flat, n, scale = x.view(-1), x.numel(), case["scale"]
    for k, f in enumerate(_BLOCK_FRACTIONS):
        block = flat[(2 + 2 * k) * n // 16:(4 + 2 * k) * n // 16]
        block.copy_(((block / scale).floor() + f) * scale)
    return {"x": x, "scale": scale, "seed": _seed(s, case)}


def _sround_check(out, inputs, case) -> str | None:
    x, scale = inputs["x"], inputs["scale"]
    problem = _tensor_problem(out, x.shape, torch.float32)
    if problem:
        return problem
    t = x.flatten().to(torch.float64) / scale
    k = out.flatten().to(torch.float64) / scale
    kr = k.round()
    off_grid = (k - kr).abs() > 1e-5 * kr.abs().clamp(min=1.0)
    if bool(off_grid.any()):
        i = int(off_grid.nonzero()[0])
        return f"element {i} is {float(out.flatten()[i]):.8g}, not a multiple of scale = {scale}"
    far = (kr - t).abs() >= 1.0 + 1e-5 * t.abs().clamp(min=1.0)
    if bool(far.any()):
        i = int(far.nonzero()[0])
        return (f"element {i} is {float(out.flatten()[i]):.8g}; x = {float(x.flatten()[i]):.8g} must round "
                "to one of its two neighbouring multiples of scale")
    frac = t - t.floor()
    up = kr > t.floor()
    problem = count_problem("the sum of (out - x) / scale (rounding must be unbiased)",
                             float((kr - t).sum()),
                             0.0, float((frac * (1 - frac)).sum()))
    if problem:
        return problem
    for lo in torch.linspace(0, 1, 11)[:-1].tolist():
        sel = (frac >= lo) & (frac < lo + 0.1)
        if bool(sel.any()):
            f = frac[sel]
            problem = count_problem(
                f"the number rounded up among fractional parts in [{lo:.1f}, {lo + 0.1:.1f})",
                float(up[sel].sum()), float(f.sum()), float((f * (1 - f)).sum()))
            if problem:
                return problem
    for f0 in _BLOCK_FRACTIONS:
        sel = (frac - f0).abs() < 0.005
        f = frac[sel]
        problem = count_problem(f"the number rounded up among the {int(sel.sum())} fractional parts near "
                                f"{f0}", float(up[sel].sum()), float(f.sum()), float((f * (1 - f)).sum()))
        if problem:
            return problem
    live = (frac > 0.01) & (frac < 0.99)
    z = (up.to(torch.float64) - frac) / torch.sqrt(frac * (1 - frac)).clamp(min=1e-3)
    return lag_problem(torch.where(live, z, 0.0), case["n"])


def _sr(m, n, scale, spread) -> dict:
    return _rows(m, n, "float32", scale=scale, spread=spread)


register(Task(
    id="random/stochastic-round",
    entrypoint="stochastic_round",
    signature="def stochastic_round(x: torch.Tensor, scale: float, seed: int) -> torch.Tensor",
    description="""
Stochastic (randomized) rounding to a grid, as used to quantize weights and gradients without bias:
x is a contiguous float32 (M, N) tensor, scale > 0 a float (the grid step) and seed an int in [1, 2^31).
With t = x / scale, out = scale * floor(t) with probability 1 - frac(t) and scale * (floor(t) + 1) with
probability frac(t), independently per element (e.g. out = scale * floor(t + u) with u ~ U[0, 1)), so
E[out] = x. Return a new float32 (M, N) tensor.
""" + _judged("every output must be a multiple of scale next to x, the rounding must be "
                     "unbiased, and the fraction rounded up must match frac(x / scale), within each tenth "
                     "of [0, 1) and in blocks of one fractional part near 0 and near 1"),
    reference=lambda x, scale, seed: torch.empty_like(x),
    make_inputs=_sround_inputs,
    shapes={
        "dev": [_sr(32, 1000, 0.1, 1.0), _sr(16, 2048, 1.0, 10.0), _sr(8, 999, 0.0625, 3.0)],
        "heldout": [_sr(7, 333, 0.25, 1.0), _sr(65, 1000, 0.001, 0.1), _sr(3, 4097, 2.0, 50.0)],
        "bench": [_sr(16384, 16384, 0.01, 1.0), _sr(8192, 32768, 0.125, 4.0)],
    },
    dtypes=("float32",),
    tolerances=_NOT_COMPARED,
    flops=lambda c: 4 * _numel(c),
    bytes=lambda c: 8 * _numel(c),
    distributions=("normal",),
    seeds=_SEEDS,
    check=_sround_check,
    baselines=_NO_BASELINES,
    notes="Judged statistically (see the description); no element-wise tolerance applies.",
))


# ---------------------------------------------------------------------------------------- randint
_RESIDUE_MODULI = (2, 3, 16)
"""Where the range is wider than the 16 bins: (v - low) mod each of these must be uniform too, so a kernel
that reaches only even values, or multiples of 3 or 16, fails where bins of 16 equal sub-ranges pass."""


def _randint_check(out, inputs, case) -> str | None:
    x, low, high = inputs["x"], inputs["low"], inputs["high"]
    problem = _tensor_problem(out, x.shape, torch.int64)
    if problem:
        return problem
    v = out.flatten()
    outside = (v < low) | (v >= high)
    if bool(outside.any()):
        i = int(outside.nonzero()[0])
        return f"element {i} is {int(v[i])}, outside [low, high) = [{low}, {high})"
    span = high - low
    n = v.numel()
    bins = min(span, 16)
    # Bin b holds the values low + j with j * bins // span == b; its share is its count of values / span.
    idx = ((v - low) * bins) // span
    counts = torch.bincount(idx, minlength=bins).to(torch.float64)
    sizes = torch.bincount((torch.arange(span) * bins) // span, minlength=bins).to(torch.float64)
    for b in range(bins):
        share = float(sizes[b]) / span
        problem = count_problem(f"the count of bin {b} of {bins} over [low, high)", float(counts[b]),
                                 n * share, n * share * (1 - share))
        if problem:
            return problem
    for m in _RESIDUE_MODULI if span > bins else ():
        # Residue r of (v - low) mod m is held by span // m values, plus one where r < span % m.
        counts = torch.bincount((v - low) % m, minlength=m).to(torch.float64)
        for r in range(m):
            share = (span // m + (r < span % m)) / span
            problem = count_problem(f"the count of values with (v - low) mod {m} = {r}", float(counts[r]),
                                    n * share, n * share * (1 - share))
            if problem:
                return problem
    problem = repetition_problem("the values", out, 1 / span)
    if problem:
        return problem
    u = (v - low).to(torch.float64)
    mu, var = (span - 1) / 2, (span * span - 1) / 12
    return lag_problem((u - mu) / math.sqrt(var), case["n"])


def _ri(m, n, low, high) -> dict:
    return _rows(m, n, "float32", low=low, high=high)


register(Task(
    id="random/randint",
    entrypoint="randint_like",
    signature="def randint_like(x: torch.Tensor, low: int, high: int, seed: int) -> torch.Tensor",
    description="""
Random integer fill, like torch.randint_like(x, low, high, dtype=torch.int64): x is a contiguous (M, N)
tensor whose values are ignored (it gives the shape and device; it holds NaN), low < high are ints with
high - low <= 2^20, and seed an int in [1, 2^31). Every element is an independent draw, uniform over the
integers low, low + 1, ..., high - 1. Return a new int64 (M, N) tensor.
""" + _judged("every value must lie in [low, high), equal sub-ranges of [low, high) must hold "
                     "equal shares, so must the residues of v - low mod 2, 3 and 16, and values must repeat "
                     "no more often than uniform draws over [low, high) do"),
    reference=lambda x, low, high, seed: torch.empty_like(x, dtype=torch.int64),
    make_inputs=_like_inputs,
    shapes={
        "dev": [_ri(32, 1000, 0, 10), _ri(16, 2048, -5, 5), _ri(8, 999, 0, 50000)],
        "heldout": [_ri(7, 333, 0, 2), _ri(65, 1000, 100, 1000), _ri(3, 4097, -1000000, 48575)],
        "bench": [_ri(16384, 16384, 0, 32000), _ri(8192, 16384, -128, 128)],
    },
    dtypes=("int64",),
    tolerances=_NOT_COMPARED,
    flops=lambda c: 2 * _numel(c),
    bytes=lambda c: 8 * _numel(c),
    distributions=("normal",),
    seeds=_SEEDS,
    check=_randint_check,
    baselines=_NO_BASELINES,
    notes="Judged statistically (see the description); no element-wise tolerance applies.",
))
