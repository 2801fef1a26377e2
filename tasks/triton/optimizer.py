"""One optimizer step over a flat parameter vector (what fused "foreach" optimizers run per bucket).

Entrypoints are functional: they return the new parameter and the new optimizer state as new
tensors and must not modify their inputs (the harness rejects mutated inputs). Hyperparameters
are Python scalars, and held-out cases use other values than dev cases, so none can be hard-coded.

FLOPs: one per +, -, *, /, sqrt or sign in the per-element update (per-step scalars such as bias
corrections are not counted). Bytes: every input tensor read once and every output written once.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

import torch

from ..registry import register
from ..spec import Task, Tolerance, elem_size

FP32_STEP = Tolerance(1e-6, 1e-5, 1e-5, "fp32 parameters O(1), updates O(lr): a few roundings of each; an "
                      "untouched parameter misses by ~lr and fails")
BF16_STEP = Tolerance(8e-3, 3e-2, 1e-2, "computed in fp32, one rounding to bf16 (3.9e-3 relative)")
FP16_STEP = Tolerance(1e-3, 1e-2, 2e-3, "computed in fp32, one rounding to fp16 (4.9e-4 relative)")
FP32_BETA_STEP = Tolerance(
    1e-5, 3e-5, 3e-5, "as FP32_STEP, but beta = 0.999 held in float32 (as Triton passes a Python float, and "
    "as PyTorch's fused kernels compute) makes 1 - beta 1.3e-5 off; outlier gradients (up to ~500) times "
    "1 - beta round to ~1e-6 absolute")
FUNCTIONAL = ("Return new tensors; do not modify any input (the harness checks). All tensors are "
              "contiguous, 1-D, of n elements and one dtype; compute in float32.")


def _wrap(text: str) -> str:
    """One paragraph re-flowed to 100 columns: the helpers below assemble descriptions from pieces."""
    return textwrap.fill(" ".join(text.split()), 100)


def optimizer_task(
    name: str, entry: str, signature: str, description: str, reference: Callable[..., Any],
    make_inputs: Callable[[Any, Any], dict[str, Any]], *, dev: dict[str, Any], held: dict[str, Any],
    flops: int | Callable[[Any], int], tensors: int, dtypes: tuple[str, ...] = ("float32",),
    distributions: tuple[str, ...] = ("normal", "outliers", "small"),
    bench: tuple[tuple[int, str], ...] = ((1 << 27, "float32"),), scalars_out: int = 0,
    fp32: Tolerance = FP32_STEP, held_extra: tuple[dict[str, Any], ...] = (),
) -> Task:
    """``dev``/``held`` are the hyperparameters of the dev and held-out cases; ``held_extra`` adds float32
    held-out cases, each ``held`` updated by its entries (``n`` among them); ``tensors`` counts the
    n-element tensors read plus those written, ``scalars_out`` the 0-d outputs."""
    half = next((d for d in dtypes if d != "float32"), None)

    def case(n: int, dtype: str, hyper: dict[str, Any]) -> dict[str, Any]:
        return {"n": n, "dtype": dtype, **hyper}

    shapes = {
        "dev": [case(1000, "float32", dev), case(20001, "float32", dev)]
        + ([case(5000, half, dev)] if half else []),
        "heldout": [case(1, "float32", held), case(100_003, "float32", held), case(12345, "float32", dev)]
        + ([case(77777, half, held)] if half else [])
        + [{**case(extra["n"], "float32", held), **extra} for extra in held_extra],
        "bench": [case(n, d, dev) for n, d in bench],
    }
    per = flops if callable(flops) else (lambda c: flops)
    return register(Task(
        id=f"optimizer/{name}",
        entrypoint=entry,
        signature=signature,
        description=_wrap(description + " " + FUNCTIONAL),
        reference=reference,
        make_inputs=make_inputs,
        shapes=shapes,
        dtypes=dtypes,
        flops=lambda c: per(c) * c["n"],
        bytes=lambda c: (tensors * c["n"] + scalars_out) * elem_size(c["dtype"]),
        tolerances={"float32": fp32, "bfloat16": BF16_STEP, "float16": FP16_STEP},
        distributions=distributions,
    ))


def _hyper(c: Any, *names: str) -> dict[str, Any]:
    return {k: c[k] for k in names}


# ---------------------------------------------------------------------------------- SGD


def _sgd_reference(param, grad, lr, weight_decay=0.0):
    return param - lr * (grad + weight_decay * param)


optimizer_task(
    "sgd", "sgd",
    "def sgd(param: torch.Tensor, grad: torch.Tensor, lr: float, weight_decay: float = 0.0) -> torch.Tensor",
    """
One plain SGD step with L2 weight decay, as torch.optim.SGD (momentum 0):
new_param = param - lr * (grad + weight_decay * param). Returns new_param.
""",
    _sgd_reference,
    lambda c, s: {"param": s.tensor((c["n"],), c["dtype"]), "grad": s.tensor((c["n"],), c["dtype"]),
                  **_hyper(c, "lr", "weight_decay")},
    dev={"lr": 0.05, "weight_decay": 0.01}, held={"lr": 0.3, "weight_decay": 0.1},
    flops=4, tensors=3, dtypes=("float32", "bfloat16"), bench=((1 << 28, "float32"), (1 << 29, "bfloat16")),
)


def _sgd_momentum_reference(param, grad, momentum_buf, lr, momentum, dampening=0.0, weight_decay=0.0,
                            nesterov=False):
    d = grad + weight_decay * param
    buf = momentum * momentum_buf + (1 - dampening) * d
    step = d + momentum * buf if nesterov else buf
    return param - lr * step, buf


optimizer_task(
    "sgd-momentum", "sgd_momentum",
    "def sgd_momentum(param: torch.Tensor, grad: torch.Tensor, momentum_buf: torch.Tensor, lr: float, "
    "momentum: float, dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False) "
    "-> tuple[torch.Tensor, torch.Tensor]",
    """
One SGD step with momentum, as torch.optim.SGD on a step after the first (the buffer exists):
d = grad + weight_decay * param; buf = momentum * momentum_buf + (1 - dampening) * d;
step = d + momentum * buf if nesterov else buf; new_param = param - lr * step.
Returns (new_param, buf). nesterov is a Python bool (held-out cases use the other value).
""",
    _sgd_momentum_reference,
    lambda c, s: {"param": s.tensor((c["n"],), c["dtype"]), "grad": s.tensor((c["n"],), c["dtype"]),
                  "momentum_buf": s.normal((c["n"],), c["dtype"], std=0.5),
                  **_hyper(c, "lr", "momentum", "dampening", "weight_decay", "nesterov")},
    dev={"lr": 0.05, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01, "nesterov": False},
    held={"lr": 0.1, "momentum": 0.8, "dampening": 0.0, "weight_decay": 0.05, "nesterov": True},
    flops=lambda c: 9 if c["nesterov"] else 7, tensors=5, dtypes=("float32", "bfloat16"),
    bench=((1 << 28, "float32"), (1 << 28, "bfloat16")),
)


# ---------------------------------------------------------------------------------- Adam family


def _adam_inputs(c: Any, s: Any) -> dict[str, Any]:
    """exp_avg_sq ~ U(0, v_max): 0.05 unless the case says otherwise."""
    n, dtype = (c["n"],), c["dtype"]
    return {"param": s.tensor(n, dtype), "grad": s.tensor(n, dtype),
            "exp_avg": s.normal(n, dtype, std=0.1),
            "exp_avg_sq": s.uniform(n, 0.0, c.get("v_max", 0.05), dtype),
            **_hyper(c, "step", "lr", "beta1", "beta2", "eps", "weight_decay")}


def _adam_moments(grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps):
    m = beta1 * exp_avg + (1 - beta1) * grad
    v = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
    bias1 = 1 - beta1 ** step
    bias2 = 1 - beta2 ** step
    denom = v.sqrt() / (bias2 ** 0.5) + eps
    return m, v, (lr / bias1) * m / denom


def _adam_reference(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay=0.0):
    grad = grad + weight_decay * param
    m, v, update = _adam_moments(grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps)
    return param - update, m, v


def _adamw_reference(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay=0.01):
    m, v, update = _adam_moments(grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps)
    return param * (1 - lr * weight_decay) - update, m, v


ADAM_SIG = ("(param: torch.Tensor, grad: torch.Tensor, exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor, "
            "step: int, lr: float, beta1: float, beta2: float, eps: float, weight_decay: float{wd}) "
            "-> tuple[torch.Tensor, torch.Tensor, torch.Tensor]")
ADAM_MOMENTS = """
m = beta1 * exp_avg + (1 - beta1) * g; v = beta2 * exp_avg_sq + (1 - beta2) * g^2;
bias1 = 1 - beta1^step; bias2 = 1 - beta2^step (step >= 1 is the number of this step, already
incremented); update = (lr / bias1) * m / (sqrt(v) / sqrt(bias2) + eps).
"""
ADAM_DEV = {"step": 10, "lr": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01}
ADAM_HELD = {"step": 1, "lr": 0.003, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6, "weight_decay": 0.1}
ADAM_TINY_MOMENT = ({"n": 30011, "v_max": 1e-8, "weight_decay": 0.0},)
"""A parameter whose second moment is tiny (a rarely updated embedding row): with small gradients
sqrt(v) / sqrt(bias2) is ~1e-3, so eps moves every update by ~0.1% and a kernel that hard-codes the usual
1e-8 fails in nearly every element. Elsewhere sqrt(v) is ~1, and such a kernel fails only where a draw
happens to put v near 0: it passed 3 of 12 evaluations on the other cases alone. No weight decay there:
grad + weight_decay * param can cancel to ~1e-5 in float32, and a tiny v then turns that rounding into
3e-5 of the update in an honest kernel."""

optimizer_task(
    "adam", "adam", "def adam" + ADAM_SIG.format(wd=" = 0.0"),
    "One Adam step, as torch.optim.Adam (L2 weight decay added to the gradient, no amsgrad):\n"
    "g = grad + weight_decay * param;" + ADAM_MOMENTS
    + "new_param = param - update. Returns (new_param, m, v).",
    _adam_reference, _adam_inputs, dev=ADAM_DEV, held=ADAM_HELD, flops=15, tensors=7, fp32=FP32_BETA_STEP,
    held_extra=ADAM_TINY_MOMENT,
)
optimizer_task(
    "adamw", "adamw", "def adamw" + ADAM_SIG.format(wd=" = 0.01"),
    "One AdamW step, as torch.optim.AdamW (decoupled weight decay, no amsgrad): g = grad;"
    + ADAM_MOMENTS + "new_param = param * (1 - lr * weight_decay) - update. Returns (new_param, m, v).",
    _adamw_reference, _adam_inputs, dev=ADAM_DEV, held=ADAM_HELD, flops=15, tensors=7, fp32=FP32_BETA_STEP,
    held_extra=ADAM_TINY_MOMENT,
)


# ---------------------------------------------------------------------------------- RMSprop, Adagrad


def _rmsprop_reference(param, grad, square_avg, lr, alpha, eps, weight_decay=0.0):
    g = grad + weight_decay * param
    sq = alpha * square_avg + (1 - alpha) * g * g
    return param - lr * g / (sq.sqrt() + eps), sq


optimizer_task(
    "rmsprop", "rmsprop",
    "def rmsprop(param: torch.Tensor, grad: torch.Tensor, square_avg: torch.Tensor, lr: float, alpha: float, "
    "eps: float, weight_decay: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]",
    """
One RMSprop step, as torch.optim.RMSprop (no momentum, not centered):
g = grad + weight_decay * param; sq = alpha * square_avg + (1 - alpha) * g^2;
new_param = param - lr * g / (sqrt(sq) + eps). Returns (new_param, sq).
""",
    _rmsprop_reference,
    lambda c, s: {"param": s.tensor((c["n"],), c["dtype"]), "grad": s.tensor((c["n"],), c["dtype"]),
                  "square_avg": s.uniform((c["n"],), 0.0, c.get("v_max", 0.05), c["dtype"]),
                  **_hyper(c, "lr", "alpha", "eps", "weight_decay")},
    dev={"lr": 0.01, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0},
    held={"lr": 0.002, "alpha": 0.9, "eps": 1e-6, "weight_decay": 0.05},
    flops=11, tensors=5,
    # As for Adam: with a tiny running average and small gradients sqrt(sq) is ~3e-4 and an eps of 1e-4
    # moves every update by a quarter; elsewhere eps = 1e-6 against sqrt(sq) ~ 0.15 was caught only
    # where a draw put sq near 0 (one element in the worst of 30 draws), and a kernel hard-coding 1e-8
    # passed some evaluations.
    held_extra=({"n": 30011, "v_max": 1e-10, "eps": 1e-4, "weight_decay": 0.0},),
)


def _adagrad_reference(param, grad, state_sum, step, lr, lr_decay=0.0, weight_decay=0.0, eps=1e-10):
    g = grad + weight_decay * param
    clr = lr / (1 + (step - 1) * lr_decay)
    total = state_sum + g * g
    return param - clr * g / (total.sqrt() + eps), total


optimizer_task(
    "adagrad", "adagrad",
    "def adagrad(param: torch.Tensor, grad: torch.Tensor, state_sum: torch.Tensor, step: int, lr: float, "
    "lr_decay: float = 0.0, weight_decay: float = 0.0, eps: float = 1e-10) "
    "-> tuple[torch.Tensor, torch.Tensor]",
    """
One Adagrad step, as torch.optim.Adagrad: g = grad + weight_decay * param;
clr = lr / (1 + (step - 1) * lr_decay) (step >= 1, this step's number); total = state_sum + g^2;
new_param = param - clr * g / (sqrt(total) + eps). Returns (new_param, total).
""",
    _adagrad_reference,
    lambda c, s: {"param": s.tensor((c["n"],), c["dtype"]), "grad": s.tensor((c["n"],), c["dtype"]),
                  "state_sum": s.uniform((c["n"],), 0.0, 2.0, c["dtype"]),
                  **_hyper(c, "step", "lr", "lr_decay", "weight_decay", "eps")},
    dev={"step": 5, "lr": 0.05, "lr_decay": 0.01, "weight_decay": 0.0, "eps": 1e-10},
    # eps against sqrt(total) ~ 1: a kernel with a constant eps (1e-10, the default) fails
    held={"step": 100, "lr": 0.1, "lr_decay": 0.001, "weight_decay": 0.02, "eps": 1e-3},
    flops=9, tensors=5,
)


# ---------------------------------------------------------------------------------- Lion


def _lion_inputs(c: Any, s: Any) -> dict[str, Any]:
    """exp_avg is nudged so that beta1 * m + (1 - beta1) * g is never within 1e-4 of zero: its sign
    decides a whole lr-sized step, and float32 and float64 could disagree on it right at zero. Every
    97th element has no gradient and no momentum yet (a parameter not used so far): c is exactly 0
    there in any precision, and sign(0) = 0 leaves it undecayed but unmoved."""
    n, dtype = (c["n"],), getattr(torch, c["dtype"])
    grad = s.tensor(n, "float32")
    m = s.normal(n, "float32", std=0.5)
    blend = c["beta1"] * m + (1 - c["beta1"]) * grad
    m = torch.where(blend.abs() < 1e-4, m + torch.where(blend < 0, -1e-3, 1e-3), m)
    unused = torch.arange(n[0], device=m.device) % 97 == 0
    grad, m = grad.masked_fill(unused, 0.0), m.masked_fill(unused, 0.0)
    return {"param": s.tensor(n, dtype), "grad": grad.to(dtype), "exp_avg": m.to(dtype),
            **_hyper(c, "lr", "beta1", "beta2", "weight_decay")}


def _lion_reference(param, grad, exp_avg, lr, beta1, beta2, weight_decay=0.0):
    update = torch.sign(beta1 * exp_avg + (1 - beta1) * grad)
    new_param = param * (1 - lr * weight_decay) - lr * update
    return new_param, beta2 * exp_avg + (1 - beta2) * grad


optimizer_task(
    "lion", "lion",
    "def lion(param: torch.Tensor, grad: torch.Tensor, exp_avg: torch.Tensor, lr: float, beta1: float, "
    "beta2: float, weight_decay: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]",
    """
One Lion step (Chen et al., 2023): c = beta1 * exp_avg + (1 - beta1) * grad;
new_param = param * (1 - lr * weight_decay) - lr * sign(c) (sign(0) = 0);
new_exp_avg = beta2 * exp_avg + (1 - beta2) * grad. Returns (new_param, new_exp_avg). Some elements
have neither gradient nor momentum, so c is exactly 0 there.
""",
    _lion_reference, _lion_inputs,
    dev={"lr": 0.001, "beta1": 0.9, "beta2": 0.99, "weight_decay": 0.1},
    held={"lr": 0.0003, "beta1": 0.95, "beta2": 0.98, "weight_decay": 0.0},
    flops=11, tensors=5, distributions=("normal", "uniform", "outliers"),
    fp32=Tolerance(2e-5, 1e-5, 1e-5, "as FP32_STEP, but 1 - beta2 computed from a float32 beta2 is ~1e-6 "
                   "off, times outlier gradients up to ~500; a step left out still misses by lr"),
)


# ---------------------------------------------------------------------------------- clipping


def _clip_reference(grad, max_norm):
    total = torch.linalg.vector_norm(grad)
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    return grad * coef, total


optimizer_task(
    "clip-grad-norm", "clip_grad_norm",
    "def clip_grad_norm(grad: torch.Tensor, max_norm: float) -> tuple[torch.Tensor, torch.Tensor]",
    """
Gradient clipping by global L2 norm, as torch.nn.utils.clip_grad_norm_ on one flattened gradient
(without the in-place update): total = sqrt(sum grad^2); coef = min(max_norm / (total + 1e-6), 1);
returns (grad * coef, total) with total a 0-d tensor of grad's dtype. Some cases clip, others
(max_norm above the norm) leave the values as they are. n reaches hundreds of millions, so the norm
needs partial sums from many programs before any element can be scaled.
""",
    _clip_reference,
    lambda c, s: {"grad": s.tensor((c["n"],), c["dtype"]), "max_norm": c["max_norm"]},
    dev={"max_norm": 1.0}, held={"max_norm": 5.0},
    flops=3, tensors=3, scalars_out=1, dtypes=("float32", "bfloat16"),
    distributions=("normal", "uniform", "outliers"), bench=((1 << 28, "float32"), (1 << 29, "bfloat16")),
)
