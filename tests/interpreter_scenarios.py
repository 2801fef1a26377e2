"""Kernels that the interpreter ran differently from the compiled kernel, run with the workarounds of
env/worker/interpreter_compat.py installed; prints one JSON object of what each did.

Run as a script with TRITON_INTERPRET=1 (tests/test_interpreter_compat.py does), never imported by
pytest: the interpreter must be on before Triton is imported.
"""

from __future__ import annotations

import json
import math
import os

assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"

from warpgym.env.worker import interpreter_compat  # noqa: E402

assert not interpreter_compat.install()

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.language.extra import libdevice  # noqa: E402
from triton.language.extra.libdevice import tanh as imported_tanh  # noqa: E402


@triton.jit
def scalar_kernel(out_ptr, eps, x_ptr):
    tl.store(out_ptr, eps)  # into a float64 buffer: shows the precision the scalar arrived in
    half = tl.load(x_ptr)
    tl.store(out_ptr + 1, (half * eps.to(tl.float32)).to(tl.float64))


@triton.jit
def libdevice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, imported_tanh(x) + libdevice.rsqrt(x * x + 1.0), mask=mask)


@triton.jit
def unmapped_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, libdevice.j0(tl.load(x_ptr + offs)))


@triton.jit
def and_mask_kernel(out_ptr, m, n, stride, BLOCK: tl.constexpr):
    rows = tl.arange(0, BLOCK)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    mask = rows < m and cols < n
    tl.store(out_ptr + rows * stride + cols, tl.full((BLOCK, BLOCK), 1.0, tl.float32), mask=mask)


@triton.jit
def or_mask_kernel(out_ptr, m, n, stride, BLOCK: tl.constexpr):
    rows = tl.arange(0, BLOCK)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    outside = rows >= m or cols >= n
    tl.store(out_ptr + rows * stride + cols, tl.full((BLOCK, BLOCK), 1.0, tl.float32), mask=outside == 0)


@triton.jit
def constexpr_and_kernel(out_ptr, FLAG: tl.constexpr, BLOCK: tl.constexpr):
    if FLAG and BLOCK > 4:
        tl.store(out_ptr, 1.0)
    else:
        tl.store(out_ptr, 2.0)


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64}),
                          triton.Config({"BLOCK": 128})], key=["n"])
@triton.jit
def tuned_kernel(out_ptr, n, BLOCK: tl.constexpr):
    tl.store(out_ptr, BLOCK + n * 0)


@triton.jit
def attribute_error_kernel(out_ptr):
    tl.store(out_ptr, tl.program_id(0).no_such_method())


@triton.jit
def dot_kernel(a_ptr, b_ptr, out_ptr, PRECISION: tl.constexpr):
    rows, cols = tl.arange(0, 16)[:, None], tl.arange(0, 16)[None, :]
    a, b = tl.load(a_ptr + rows * 16 + cols), tl.load(b_ptr + rows * 16 + cols)
    if PRECISION == "default":
        tl.store(out_ptr + rows * 16 + cols, tl.dot(a, b))
    else:
        tl.store(out_ptr + rows * 16 + cols, tl.dot(a, b, input_precision=PRECISION))


@triton.jit
def assert_kernel(out_ptr):
    tl.assume(tl.program_id(0) > 5)  # false: the interpreter raises AssertionError, as a device_assert does
    tl.store(out_ptr, 1.0)


def caught(call) -> BaseException:
    try:
        call()
    except BaseException as exc:  # noqa: BLE001 - the point is what it raised
        return exc
    raise AssertionError("expected an error")


def main() -> None:
    report: dict[str, object] = {}

    out = torch.zeros(2, dtype=torch.float64)
    scalar_kernel[(1,)](out, 0.1, torch.tensor([3.0], dtype=torch.float16))
    report["scalar"] = out.tolist()

    x = torch.linspace(-3, 3, 50)
    got = torch.empty(64)
    libdevice_kernel[(1,)](x, got, 50, BLOCK=64)
    report["libdevice_error"] = (got[:50] - (torch.tanh(x) + torch.rsqrt(x * x + 1))).abs().max().item()

    exc = caught(lambda: unmapped_kernel[(1,)](x, got, BLOCK=16))
    report["unmapped"] = interpreter_compat.limitation(exc)

    for name, kernel in (("and", and_mask_kernel), ("or", or_mask_kernel)):
        buf = torch.zeros(16, 16)
        kernel[(1,)](buf, 3, 5, 16, BLOCK=8)
        report[f"{name}_written"] = [int(buf.sum().item()), int(buf[:3, :5].sum().item())]

    flags = torch.zeros(2)
    constexpr_and_kernel[(1,)](flags, FLAG=True, BLOCK=8)
    constexpr_and_kernel[(1,)](flags[1:], FLAG=False, BLOCK=8)
    report["constexpr_and"] = flags.tolist()

    blocks = []
    for _ in range(4):
        slot = torch.zeros(1, dtype=torch.int32)
        tuned_kernel[(1,)](slot, 7)
        blocks.append(int(slot.item()))
    report["autotune"] = blocks
    report["autotune_notes"] = list(interpreter_compat.NOTES)

    report["attribute_error"] = interpreter_compat.limitation(
        caught(lambda: attribute_error_kernel[(1,)](got)))
    report["device_assert"] = interpreter_compat.limitation(caught(lambda: assert_kernel[(1,)](got)))

    from triton.runtime.errors import InterpreterError

    def host_raise() -> None:
        raise InterpreterError("AttributeError('raised by host code, not by the interpreter')")

    report["host_raised"] = interpreter_compat.limitation(caught(host_raise))

    a = torch.full((16, 16), 1 + 3 * 2.0**-12)  # exact in float32, between two TF32 values
    dots = {}
    for precision in ("default", "tf32", "tf32x3", "ieee"):
        product = torch.empty(16, 16)
        dot_kernel[(1,)](a, torch.eye(16), product, PRECISION=precision)
        dots[precision] = product[0, 0].item()
    report["dot"] = dots
    report["plain_error"] = interpreter_compat.limitation(caught(lambda: math.sqrt(-1)))
    print("REPORT " + json.dumps(report))


if __name__ == "__main__":
    main()
