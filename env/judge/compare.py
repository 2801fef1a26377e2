"""Comparing a candidate's outputs with the high-precision reference.

An output passes only if its shape and dtype are exactly those of the reference, no element
is NaN where the reference is not, every element is within ``atol + rtol * |ref|``, and the
norm-wise relative error is within ``rel_l2`` (so an answer near zero everywhere does not
pass on the absolute tolerance alone); a single-value output is judged element-wise. An exact task
(``atol = rtol = 0``) with a floating-point output expects the reference rounded to that dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch
from warpgym.tasks import Task


def compare_outputs(outputs: list[Any], expected: list[Any], meta: list[Any], task: Task) -> dict[str, Any]:
    """Fields of a ``CaseResult`` (all but the case's identity)."""
    if len(outputs) != len(expected):
        return {"passed": False, "message": f"returned {len(outputs)} output(s); expected {len(expected)}"}
    worst: dict[str, Any] = {"passed": True, "max_abs_error": 0.0, "max_rel_error": 0.0, "rel_l2_error": 0.0,
                             "mismatches": 0, "numel": 0, "message": ""}
    for index, (out, ref, want) in enumerate(zip(outputs, expected, meta, strict=True)):
        label = f"output {index}" if len(outputs) > 1 else "output"
        if not isinstance(want, torch.Tensor):
            if out != want:
                return {"passed": False, "message": f"{label}: got {out!r}, expected {want!r}"}
            continue
        if tuple(out.shape) != tuple(want.shape):
            return {"passed": False,
                    "message": f"{label} has shape {tuple(out.shape)}; expected {tuple(want.shape)}"}
        if out.dtype != want.dtype:
            return {"passed": False, "message": f"{label} has dtype {out.dtype}; expected {want.dtype}"}
        fields = _compare_tensor(out, ref, task.tolerance(str(want.dtype).removeprefix("torch.")))
        worst["numel"] += out.numel()
        worst["mismatches"] += fields["mismatches"]
        for key in ("max_abs_error", "max_rel_error", "rel_l2_error"):
            worst[key] = _worse(worst[key], fields[key])
        if not fields["passed"]:
            worst["passed"] = False
            worst["first_mismatch"] = fields.get("first_mismatch")
            worst["message"] = f"{label}: {fields['message']}"
    return worst


def _worse(a: float, b: float) -> float:
    if a != a or b != b:
        return float("nan")
    return max(a, b)


def _abs_error(o: torch.Tensor, r: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Where o equals r (equal infinities, NaN where r is NaN), and |o - r|: 0 there, inf for other NaN."""
    same = (o == r) | (torch.isnan(o) & torch.isnan(r))
    diff = torch.where(same, 0.0, (o - r).abs())
    return same, torch.where(torch.isnan(diff), float("inf"), diff)


CHUNK_ELEMENTS = 1 << 25
"""Elements compared at a time: each float64 temporary of a chunk is 256 MiB. A bench-sized output (2^30
elements) compared whole took a dozen 8 GiB temporaries, more than an 80 GB GPU holds beside the reference."""
LOWERED_SAMPLE = 1 << 24
"""Elements, evenly spaced, that the half-precision diagnosis of a failed float32 output looks at."""


@dataclass
class _Tally:
    """What the chunks of one output add up to."""

    mismatches: int = 0
    nan_out: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    ref_norms: list[float] = field(default_factory=list)
    err_norms: list[float] = field(default_factory=list)
    first: int | None = None
    """Flat index of the first mismatch."""


def _compare_chunk(o: torch.Tensor, ref: torch.Tensor, out_dtype: torch.dtype, tol: Any, start: int,
                   tally: _Tally) -> None:
    """Fold one chunk of the flattened output (``o``, float64) and reference into ``tally``."""
    r = ref.to(dtype=torch.float64)
    same, diff = _abs_error(o, r)
    converted = out_dtype.is_floating_point and ref.dtype != out_dtype
    as_held = ref.to(out_dtype).to(torch.float64) if converted else r  # the answer in the output dtype
    if converted:
        # Beyond the output dtype's range the answer it holds is an infinity (float16 above 65520): that
        # infinity is right, as the reference computed in that dtype gives it.
        overflowed = torch.isfinite(r) & torch.isinf(as_held) & (o == as_held)
        same = same | overflowed
        diff = torch.where(overflowed, 0.0, diff)
    # Where the answer is infinite the bound is too (rtol * inf), so only the same infinity matches there.
    bad = ~(((diff <= tol.atol + tol.rtol * r.abs()) & torch.isfinite(r)) | same)
    mismatches = int(bad.sum())
    if mismatches and tally.first is None:
        tally.first = start + int(bad.nonzero()[0])
    tally.mismatches += mismatches
    finite = torch.isfinite(r)
    held, held_diff = r, diff
    if out_dtype in (torch.float16, torch.bfloat16) and converted:
        # The norm-wise bound is against the answer as the output dtype holds it: a softmax over 2^26
        # elements is ~1e-8 per element, below float16's range, and zero is then the best answer.
        held = as_held
        finite = finite & torch.isfinite(held)
        held_diff = _abs_error(o, held)[1]
    tally.ref_norms.append(float(torch.linalg.vector_norm(torch.where(finite, held, 0.0))))
    tally.err_norms.append(float(torch.linalg.vector_norm(torch.where(finite, held_diff, 0.0))))
    tally.max_abs = _worse(tally.max_abs, float(diff.max()))
    rel = diff / r.abs().clamp_min(1e-30)
    tally.max_rel = _worse(tally.max_rel, float(torch.where(same, torch.zeros_like(rel), rel).max()))
    tally.nan_out += int((torch.isnan(o) & ~torch.isnan(r)).sum())


def _compare_tensor(out: torch.Tensor, ref: torch.Tensor, tol: Any) -> dict[str, Any]:
    device = ref.device
    if tol.atol == 0 and tol.rtol == 0 and out.dtype.is_floating_point and ref.dtype != out.dtype:
        ref = ref.to(out.dtype)  # an exact task's answer is the reference as the output's dtype holds it
    if out.numel() == 0:
        return {"passed": True, "max_abs_error": 0.0, "max_rel_error": 0.0, "rel_l2_error": 0.0,
                "mismatches": 0, "message": ""}
    flat_out, flat_ref = out.reshape(-1), ref.reshape(-1)
    tally = _Tally()
    for start in range(0, flat_out.numel(), CHUNK_ELEMENTS):
        stop = start + CHUNK_ELEMENTS
        o = flat_out[start:stop].to(device=device, dtype=torch.float64)
        _compare_chunk(o, flat_ref[start:stop], out.dtype, tol, start, tally)
    ref_norm, err_norm = math.hypot(*tally.ref_norms), math.hypot(*tally.err_norms)
    rel_l2 = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else float("inf"))
    mismatches, max_abs = tally.mismatches, tally.max_abs
    fields: dict[str, Any] = {"max_abs_error": max_abs, "max_rel_error": tally.max_rel,
                              "rel_l2_error": rel_l2, "mismatches": mismatches}
    if mismatches:
        flat = tally.first
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), out.shape))
        fields["first_mismatch"] = {"index": list(index), "got": float(flat_out[flat].double()),
                                    "expected": float(flat_ref[flat].double())}
        what = f"{mismatches} of {out.numel()} elements outside atol={tol.atol:g}, rtol={tol.rtol:g}"
        if tally.nan_out:
            what += f" ({tally.nan_out} NaN where the reference is finite)"
        first = fields["first_mismatch"]
        fields["message"] = (f"{what}; first at index {list(index)}: got {first['got']:.6g}, "
                             f"expected {first['expected']:.6g}; max abs error {max_abs:.3g}")
        fields["passed"] = False
    elif rel_l2 > tol.rel_l2 and out.numel() > 1:
        # (A single value is judged element-wise: its norm-wise ratio is its relative error, which no finite
        # precision meets for a result that cancels to nearly zero, such as a loss of 3e-6 from logits of 50.)
        fields["message"] = (f"relative L2 error {rel_l2:.3g} exceeds {tol.rel_l2:g}: every element is "
                             "within the element-wise tolerance, but the output as a whole is off")
        fields["passed"] = False
    else:
        fields["message"] = ""
        fields["passed"] = True
    if not fields["passed"] and out.dtype == torch.float32:
        step = max(1, -(-flat_out.numel() // LOWERED_SAMPLE))
        lowered = lowered_precision(flat_out[::step].to(device=device, dtype=torch.float64),
                                    flat_ref[::step].to(dtype=torch.float64))
        if lowered:
            unit = UNIT_ROUNDOFF[lowered]
            fields["message"] += (f"; the errors have the size and pattern of {lowered} rounding (unit "
                                  f"roundoff {unit:.1e}), as float16 or bfloat16 arithmetic in the kernel "
                                  "gives: a float32 task must compute in float32")
    return fields


UNIT_ROUNDOFF = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
ROUNDING_ENVELOPE = 16
"""Unit roundoffs of error per element that rounding in a short chain of half-precision operations stays
within, relative to the element's magnitude or, for results that cancel, the output's mean magnitude."""
HALF_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def lowered_precision(o: torch.Tensor, r: torch.Tensor) -> str | None:
    """The half-precision format whose rounding explains a float32 output's errors, or None.

    Evidence of either kind: the output's values are ones the format holds, each within one rounding of
    the reference (stored through it: a float32 value drawn at random is a float16 one once in 8000), or
    the errors have the pattern of rounding in it: within a few unit roundoffs of every element, about one
    unit roundoff on the whole, spread over most elements (rounding touches every one) and unbiased
    relative to each. A logic bug breaks the pattern: an element off by one leaves the envelope, a wrong
    row or tail touches few elements, a wrong constant leans one way."""
    finite = torch.isfinite(o) & torch.isfinite(r)
    o, r = o[finite], r[finite]
    error = o - r
    if o.numel() < 16 or not bool((error != 0).any()) or float(r.norm()) == 0:
        return None
    rel_l2 = float(error.norm() / r.norm())
    magnitude = r.abs().mean()
    sizable = r.abs() >= magnitude / 100
    relative = error[sizable] / r[sizable]
    bias = float(relative.mean().abs() / relative.pow(2).mean().sqrt().clamp_min(1e-300))
    unbiased = max(0.1, 3 / math.sqrt(max(relative.numel(), 1)))
    """Rounding's relative errors average out (|mean| / rms about 1 / sqrt(n)); a formula's lean one way."""
    found = []
    for name, dtype in HALF_DTYPES.items():
        unit = UNIT_ROUNDOFF[name]
        nonzero = o != 0
        held = o[nonzero].to(dtype).to(torch.float64) == o[nonzero]
        one_rounding = (error.abs() <= 2 * unit * r.abs())
        if int(nonzero.sum()) >= 16 and float(held.double().mean()) >= 0.9 \
                and float(one_rounding.double().mean()) >= 0.9:
            return name
        inside = bool((error.abs() <= ROUNDING_ENVELOPE * unit * (r.abs() + magnitude)).all())
        spread = float((relative.abs() >= unit / 8).double().mean()) if relative.numel() else 0.0
        if inside and unit / 16 <= rel_l2 <= 4 * unit and bias < unbiased and spread >= 0.5:
            found.append((abs(math.log(rel_l2 / unit)), name))
    return min(found)[1] if found else None
