"""Candidates built at test time from a pinned third-party package's Triton kernels (Liger-Kernel), and
broken variants of them: kernels nobody here wrote, judged as any candidate is.

Only the kernels' source text is taken (read with ``inspect`` from the installed package, never kept
in this repository); each candidate is that text behind a small wrapper of ours, with the imports a
candidate may use. A mutant is the same candidate with one textual change a real bug would make.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

PACKAGE = "liger_kernel"
PREAMBLE = """import torch
import triton
import triton.language as tl
from triton.language.extra.libdevice import rsqrt, tanh

_CASTING_MODE_NONE: tl.constexpr = tl.constexpr(-1)
_CASTING_MODE_LLAMA: tl.constexpr = tl.constexpr(0)
_CASTING_MODE_GEMMA: tl.constexpr = tl.constexpr(1)

"""


@dataclass(frozen=True)
class Mutant:
    name: str
    old: str
    new: str


@dataclass(frozen=True)
class Case:
    task: str
    module: str
    kernels: tuple[str, ...]
    """Names of the package's kernels (and the @triton.jit helpers they call), in order."""
    wrapper: str
    mutants: tuple[Mutant, ...]
    known_issue: str | None = None
    """Why the right kernel is not accepted yet, when the fault is the task's (an xfail, not a pass)."""


CASES = (
    Case("normalization/rms-norm", "rms_norm", ("_rms_norm_forward_kernel",), '''
def rms_norm(x, weight, eps=1e-6):
    n = x.shape[-1]
    rows = x.reshape(-1, n)
    y = torch.empty_like(rows)
    rstd = torch.empty(rows.shape[0], dtype=torch.float32, device=x.device)
    _rms_norm_forward_kernel[(rows.shape[0],)](
        y, y.stride(0), rows, rows.stride(0), weight, weight.stride(0), rstd, rstd.stride(0), n, eps, 0.0,
        _CASTING_MODE_LLAMA, elementwise_affine=True, BLOCK_SIZE=triton.next_power_of_2(n))
    return y.view(x.shape)
''', (Mutant("mask-off-by-one", "mask = col_offsets < n_cols", "mask = col_offsets < n_cols - 1"),)),
    Case("normalization/layer-norm", "layer_norm", ("_layer_norm_forward_kernel",), '''
def layer_norm(x, weight, bias, eps=1e-5):
    n = x.shape[-1]
    y = torch.empty_like(x)
    mean = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
    rstd = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
    _layer_norm_forward_kernel[(x.shape[0],)](
        y, y.stride(0), x, x.stride(0), weight, weight.stride(0), bias, bias.stride(0), mean, mean.stride(0),
        rstd, rstd.stride(0), n, eps, BLOCK_SIZE=triton.next_power_of_2(n))
    return y
''', (Mutant("variance-unmasked", "tl.sum(X_centered_masked * X_centered_masked",
              "tl.sum(X_centered * X_centered"),)),
    Case("normalization/softmax", "softmax", ("_softmax_single_block_forward_kernel",), '''
def softmax(x):
    m, n = x.shape
    y = torch.empty_like(x)
    _softmax_single_block_forward_kernel[(m,)](y, y.stride(0), x, x.stride(0), n,
                                               BLOCK_SIZE=triton.next_power_of_2(n))
    return y
''', (Mutant("other-zero", 'other=-float("inf")', "other=0.0"),)),
    Case("activation/swiglu", "swiglu", ("silu", "_swiglu_fused_gate_up_forward_kernel"), '''
def swiglu(x):
    m, n = x.shape[0], x.shape[1] // 2
    c = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _swiglu_fused_gate_up_forward_kernel[(m,)](x, c, x.stride(0), c.stride(0), ffn_size=n,
                                               BLOCK_SIZE=triton.next_power_of_2(n))
    return c
''', (Mutant("up-shifted", "y_ptr + ffn_size + col_offsets", "y_ptr + ffn_size - 1 + col_offsets"),)),
    Case("activation/geglu", "geglu", ("_geglu_tanh_forward_kernel",), '''
def geglu(x):
    m, n = x.shape[0], x.shape[1] // 2
    c = torch.empty((m, n), dtype=x.dtype, device=x.device)
    block = triton.next_power_of_2(n)
    for row in range(m):  # the kernel steps a, b and c by one shared stride: one row per launch
        _geglu_tanh_forward_kernel[(1,)](x[row], x[row, n:], c[row], 0, n_cols=n, BLOCK_SIZE=block)
    return c
''', (Mutant("cube-dropped", "(a_row + 0.044715 * a_cubed)", "(a_row)"),)),
    Case("normalization/add-rms-norm", "fused_add_rms_norm", ("_fused_add_rms_norm_forward_kernel",), '''
def add_rms_norm(x, residual, weight, eps=1e-6):
    m, n = x.shape
    y = torch.empty_like(x)
    s = torch.empty_like(x)
    rstd = torch.empty(m, dtype=torch.float32, device=x.device)
    _fused_add_rms_norm_forward_kernel[(m,)](
        y, y.stride(0), s, s.stride(0), x, x.stride(0), residual, residual.stride(0), weight,
        weight.stride(0), rstd, rstd.stride(0), n, eps, 0.0, _CASTING_MODE_LLAMA,
        BLOCK_SIZE=triton.next_power_of_2(n))
    return y, s
''', (Mutant("mean-over-block", "/ n_cols", "/ BLOCK_SIZE"),)),
)


def kernel_source(module: str, name: str) -> str:
    """The source of one of the package's @triton.jit functions, as installed."""
    import importlib

    mod = importlib.import_module(f"{PACKAGE}.ops.{module}")
    fn: Any = getattr(mod, name)
    return inspect.getsource(getattr(fn, "fn", fn))


def candidate(case: Case, mutant: Mutant | None = None) -> str:
    """The candidate module: the package's kernels, verbatim (or with one mutation), behind our wrapper."""
    kernels = "\n\n".join(kernel_source(case.module, name) for name in case.kernels)
    if mutant is not None:
        assert kernels.count(mutant.old) >= 1, f"{case.task}: {mutant.name}: {mutant.old!r} not in the kernel"
        kernels = kernels.replace(mutant.old, mutant.new)
    return PREAMBLE + kernels + "\n" + case.wrapper
