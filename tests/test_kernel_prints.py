"""A kernel's prints reach host code (a Python print in the interpreter, the process's standard output on a
GPU), where they could be read back: kernels may not print. The scan refuses the spellings it reads, and the
compiled code is read for printf whatever spelling made it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from warpgym.env.judge import static
from warpgym.env.judge.kernels import add_kernels
from warpgym.env.judge.result import KernelReport


@dataclass
class _Result:
    kernels: list[KernelReport] = field(default_factory=list)
    compile_errors: list[str] = field(default_factory=list)
    skipped_checks: list[str] = field(default_factory=list)


@dataclass
class _Evaluation:
    result: _Result = field(default_factory=_Result)
    flags: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def flag(self, code: str, **fields: Any) -> None:
        self.flags.append((code, fields))


def _compiled_ptx(tmp_path: Any, body: str) -> str:
    """PTX for sm_90a of a one-argument kernel whose last line is ``body``, compiled here without a GPU."""
    import importlib.util

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    path = tmp_path / "printing_kernel.py"
    path.write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                    "def kernel(x_ptr, BLOCK: tl.constexpr):\n"
                    "    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n"
                    f"    {body}\n")
    spec = importlib.util.spec_from_file_location("printing_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    source = ASTSource(module.kernel, {"x_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 128})
    return triton.compile(source, target=GPUTarget("cuda", 90, 32)).asm["ptx"]


@pytest.mark.parametrize("body", ['tl.device_print("x", x)', 'print("x", x)'])
def test_a_kernel_whose_compiled_code_prints_is_refused(tmp_path, body):
    ptx = _compiled_ptx(tmp_path, body)
    ev = _Evaluation()
    add_kernels(ev, [{"ok": True, "kernel": "kernel", "name": "kernel", "target": "sm_90a", "ptx": ptx,
                      "cubin": ""}])
    assert ("kernel-print", {"kernel": "kernel"}) in ev.flags


def test_a_kernel_that_stores_what_it_loads_is_not_taken_for_a_print(tmp_path):
    ptx = _compiled_ptx(tmp_path, "tl.store(x_ptr + tl.arange(0, BLOCK), x + 1)")
    ev = _Evaluation()
    add_kernels(ev, [{"ok": True, "kernel": "kernel", "name": "kernel", "target": "sm_90a", "ptx": ptx,
                      "cubin": ""}])
    assert not [code for code, _ in ev.flags if code == "kernel-print"]


@pytest.mark.parametrize("line", ['tl.device_print("x", x)', 'print("x", x)', "tl.core.device_print('x', x)"])
def test_the_scan_refuses_a_print_in_a_kernel(line):
    source = ("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
              "def kernel(x_ptr, BLOCK: tl.constexpr):\n"
              "    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n"
              f"    {line}\n\n\ndef run(x):\n    kernel[(1,)](x, BLOCK=128)\n    return x\n")
    codes = {v.code for v in static.check_source(source, "run", ["x"]).violations}
    assert "kernel-print" in codes


def test_the_scan_lets_host_code_print():
    source = ("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
              "def kernel(x_ptr, BLOCK: tl.constexpr):\n"
              "    tl.store(x_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + tl.arange(0, BLOCK)))\n\n\n"
              "def run(x):\n    print('launching', x.shape)\n    kernel[(1,)](x, BLOCK=128)\n    return x\n")
    report = static.check_source(source, "run", ["x"])
    assert report.ok, report.violations
