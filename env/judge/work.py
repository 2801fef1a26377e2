"""What the profiled call's instructions did, in the task's own units: floating-point operations and bytes.

An executed count shows that a required instruction ran, not that it did the task: one wgmma in a side
kernel, or a full-size one on scratch data, runs the instruction while FFMA or mma.sync computes the
answer, and a TMA load of one tile beside plain loads of every operand shows TMA "executed". Each SASS
row of Nsight Compute's report carries its predicated-on thread count, and most opcodes say how much
work one thread's share is: a tensor-core opcode names its tile (``HGMMA.64x256x16`` is 2*64*256*16
flops per warpgroup of 128 threads; ``HMMA.16816`` is m16n8k16 per warp of 32), an FFMA is 2 flops, an
``LDG.E.128`` moves 16 bytes. So for a task that requires tensor-core and TMA instructions the judge
asks, on the profiled case, that

- the required tensor-core instructions did at least ``TENSOR_SHARE`` of the task's flops,
- all other floating-point arithmetic (scalar and packed FMA/MUL/ADD, other tensor-core families) did at
  most ``OTHER_SHARE`` of them: a product computed another way shows there, whatever ran beside it,
- every other instruction together (integer, floating-point, conversion, memory, control: thread
  executions of all but the tensor-core opcodes) ran at most ``OTHER_INSTRUCTIONS`` per task flop. A
  product done without tensor cores takes at least one instruction per four flops (HFMA2) and far more
  when emulated in integers on the operands' bits, which the floating-point bound alone does not see,
- ordinary global loads (LDG, generic LD, cp.async's LDGSTS) moved at most ``LOAD_SHARE`` times the
  task's bytes: without TMA, a GEMM's or attention's operands are read once per output tile.

The references leave wide margins (measured on the H200 at the largest dev case: tensor-core flops 1.0x
to 1.4x of the task's, tiles padded or products recomputed; other arithmetic under 1.3%; all other
instructions 0.009 to 0.023 per flop; ordinary loads at most 0.27x of the bytes, attention backward's delta
pass reading O and dO).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Protocol

TENSOR_SHARE = 0.9
OTHER_SHARE = 0.25
OTHER_INSTRUCTIONS = 0.25
LOAD_SHARE = 1.0
MMA_FEATURES = frozenset({"wgmma", "mma", "tcgen05"})
"""Required features whose instructions do a task's multiply-adds."""
TENSOR_FAMILIES = ("wgmma", "mma.sync", "tcgen05")

_GMMA = re.compile(r"^[HQIB]GMMA\.(\d+)x(\d+)x(\d+)\b")
_MMA = re.compile(r"^[HIDB]MMA\.(\d+)\b")
_TCGEN05_MMA = re.compile(r"^UTC\w*MMA\b")
ARITHMETIC_FLOPS = {"FFMA": 2, "FMUL": 1, "FADD": 1, "FFMA2": 4, "FMUL2": 2, "FADD2": 2,
                    "HFMA2": 4, "HMUL2": 2, "HADD2": 2, "DFMA": 2, "DMUL": 1, "DADD": 1}
"""Flops per thread of the floating-point opcodes (the packed ones work on two lanes)."""
LOADS = ("LDG", "LD", "LDGSTS")
_WIDTHS = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16, "256": 32}


class Row(Protocol):
    opcode: str
    executed: int | None
    threads: int | None


@dataclass
class ExecutedWork:
    """Totals over every profiled launch of one call."""

    tensor_flops: dict[str, float] = field(default_factory=lambda: {f: 0.0 for f in TENSOR_FAMILIES})
    unsized: dict[str, int] = field(default_factory=dict)
    """Thread executions of tensor-core opcodes that name no tile (tcgen05's take it from a descriptor)."""
    other_flops: float = 0.0
    """Scalar and packed floating-point arithmetic."""
    other_instructions: float = 0.0
    """Thread executions of every opcode that is not a tensor-core one."""
    load_bytes: float = 0.0
    """Moved by ordinary global loads."""

    def as_dict(self, flops: float, nbytes: float) -> dict[str, object]:
        """For the result: the totals and their shares of the task's flops and bytes on the case."""
        return {**asdict(self), "task_flops": flops, "task_bytes": nbytes}


def _threads(row: Row) -> int:
    if row.threads is not None:
        return row.threads
    return 32 * (row.executed or 0)  # no thread column: count every lane, an upper bound


def _mma_tile(digits: str) -> tuple[int, int, int]:
    """``16816`` -> m16n8k16, ``1688`` -> m16n8k8, ``884`` -> m8n8k4; an unread name counts as m16n8k16."""
    for m, n in (("16", "8"), ("8", "8")):
        if digits.startswith(m + n) and len(digits) > len(m + n):
            return int(m), int(n), int(digits[len(m + n):])
    return 16, 8, 16


def tensor_flops(opcode: str) -> tuple[str, float] | None:
    """(family, flops per thread) of a tensor-core opcode, with -1 flops when the opcode names no tile."""
    if m := _GMMA.match(opcode):
        a, b, c = (int(g) for g in m.groups())
        return "wgmma", 2.0 * a * b * c / 128
    if m := _MMA.match(opcode):
        a, b, c = _mma_tile(m.group(1))
        return "mma.sync", 2.0 * a * b * c / 32
    if _TCGEN05_MMA.match(opcode):
        return "tcgen05", -1.0
    return None


def load_width(opcode: str) -> int:
    """Bytes one thread moves with a global load opcode (``LDG.E.128`` 16, ``LDG.E.U16`` 2, else 4)."""
    for part in opcode.split(".")[1:]:
        if part in _WIDTHS:
            return _WIDTHS[part]
    return 4


def executed_work(rows_of_launches: Iterable[Sequence[Row]]) -> ExecutedWork:
    work = ExecutedWork()
    for rows in rows_of_launches:
        for row in rows:
            threads = _threads(row)
            if threads <= 0:
                continue
            head = row.opcode.split(".", 1)[0]
            if (tensor := tensor_flops(row.opcode)) is not None:
                family, per_thread = tensor
                if per_thread < 0:
                    work.unsized[family] = work.unsized.get(family, 0) + threads
                else:
                    work.tensor_flops[family] += per_thread * threads
                continue
            work.other_instructions += threads
            if head in ARITHMETIC_FLOPS:
                work.other_flops += ARITHMETIC_FLOPS[head] * threads
            elif head in LOADS:
                work.load_bytes += load_width(row.opcode) * threads
    return work


def shortfalls(required: Iterable[str], features: dict[str, tuple[str, ...]], work: ExecutedWork,
               flops: float, nbytes: float) -> tuple[dict[str, str], list[str]]:
    """Per required feature, why its instructions did not do the task's work (empty when they did), and
    what could not be measured."""
    missing: dict[str, str] = {}
    unmeasured: list[str] = []
    for feature in required:
        families = features.get(feature, ())
        if feature in MMA_FEATURES and flops > 0:
            if any(work.unsized.get(f) for f in families):
                unmeasured.append(f"the flops of {'/'.join(families)} instructions cannot be read from their "
                                  "opcodes (their tile is in a descriptor): executed counts only")
                continue
            done = sum(work.tensor_flops.get(f, 0.0) for f in families)
            other = work.other_flops + sum(v for f, v in work.tensor_flops.items() if f not in families)
            if done < TENSOR_SHARE * flops:
                missing[feature] = (
                    f"{'/'.join(families)} instructions did {done / flops:.1%} of the task's "
                    f"{flops:.3g} flops on the profiled case; at least {TENSOR_SHARE:.0%} must run on them "
                    "(a few of them beside the real computation do not count)")
            elif other > OTHER_SHARE * flops:
                missing[feature] = (
                    "other floating-point arithmetic (FFMA, FMUL, HFMA2, other tensor-core instructions) "
                    f"did {other / flops:.1%} of the task's {flops:.3g} flops on the profiled case, at most "
                    f"{OTHER_SHARE:.0%} may: the product was computed another way than with "
                    f"{'/'.join(families)}")
            elif work.other_instructions > OTHER_INSTRUCTIONS * flops:
                missing[feature] = (
                    "instructions other than tensor-core ones (integer, floating-point, memory and control "
                    f"together) ran {work.other_instructions / flops:.2f} times per flop of the task's "
                    f"{flops:.3g} on the profiled case, at most {OTHER_INSTRUCTIONS:g} may: the product was "
                    f"computed another way than with {'/'.join(families)} (the references run under 0.03)")
        elif feature == "tma" and nbytes > 0 and work.load_bytes > LOAD_SHARE * nbytes:
            missing[feature] = (
                f"ordinary global loads (LDG, LD, LDGSTS) moved {work.load_bytes / nbytes:.2f}x the task's "
                f"{nbytes:.3g} bytes on the profiled case, at most {LOAD_SHARE:g}x may: the operands came "
                "through plain loads, not TMA")
    return missing, unmeasured

