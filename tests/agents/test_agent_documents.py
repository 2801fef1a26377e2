"""Every code example in the hardware documents builds for its target, and uses what it teaches.

CUDA C++ goes through NVRTC (cuda.bindings.nvrtc) for the target, PTX through the ptxas in
Triton's wheel, Triton kernels through ``triton.compile`` with a ``GPUTarget``; all offline, no
GPU. The instruction families of the resulting SASS are counted with the environment's own
analysis, so an example that claims to show wgmma and compiles to something else fails here.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from warpgym.env.toolchain.disassemble import count_cubin
from warpgym.env.toolchain.families import count_ptx
from warpgym.env.toolchain.targets import TARGETS
from warpgym.env.toolchain.tools import tool
from warpgym.prompts import DocExample, document_blocks, document_examples

DOCUMENTS = ("sm_90a", "sm_100a", "triton")

# The families each CUDA/PTX example must show in its SASS.
EXPECTED: dict[tuple[str, str], set[str]] = {
    ("sm_90a", "tma-scale"): {"tma", "mbarrier", "fence.proxy.async"},
    ("sm_90a", "wgmma-64x64x16"): {"wgmma", "fence.proxy.async"},
    ("sm_90a", "warp-specialised-sum"): {"setmaxnreg", "bulk-copy", "mbarrier"},
    ("sm_90a", "cluster-pair-sum"): {"cluster"},
    ("sm_90a", "transpose16"): {"ldmatrix", "stmatrix"},
    ("sm_90a", "bulk-double"): {"bulk-copy", "mbarrier"},
    ("sm_100a", "tmem-roundtrip"): {"tcgen05-tmem"},
    ("sm_100a", "tcgen05-128x64x16"): {"tcgen05", "mbarrier", "fence.proxy.async"},
    ("sm_100a", "tma-scale"): {"tma", "mbarrier"},
    ("sm_100a", "warp-specialised-sum"): {"setmaxnreg", "bulk-copy", "mbarrier"},
    ("sm_100a", "cluster-pair-sum"): {"cluster"},
}

# How to compile each Triton example: kernel, signature, constexprs, options, families per target.
TRITON_BUILDS: dict[str, dict[str, Any]] = {
    "matmul-pointers": {
        "kernel": "matmul_abt_kernel",
        "signature": {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16",
                      **{n: "i32" for n in ("M", "N", "K", "stride_am", "stride_ak", "stride_bn", "stride_bk",
                                            "stride_cm", "stride_cn")}},
        "constexprs": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8},
        "options": {"num_warps": 8, "num_stages": 3},
        "families": {"sm_90a": {"wgmma"}, "sm_100a": {"tcgen05"}},
    },
    "matmul-descriptors": {
        "kernel": "matmul_abt_desc_kernel",
        "signature": {"a_desc": "tensordesc<bf16[128, 64]>", "b_desc": "tensordesc<bf16[128, 64]>",
                      "c_desc": "tensordesc<bf16[128, 128]>", "K": "i32"},
        "constexprs": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64},
        # What the host wrapper passes: warp specialisation on Blackwell only (see the document).
        "target_constexprs": {"sm_90a": {"WARP_SPECIALIZE": False}, "sm_100a": {"WARP_SPECIALIZE": True}},
        "options": {"num_warps": 4, "num_stages": 3},
        "families": {"sm_90a": {"wgmma", "tma", "mbarrier"},
                     "sm_100a": {"tcgen05", "tma", "mbarrier", "setmaxnreg"}},
    },
    "softmax-rows": {
        "kernel": "softmax_rows_kernel",
        "signature": {"x_ptr": "*fp32", "y_ptr": "*fp32", "n_cols": "i32", "stride_x": "i32",
                      "stride_y": "i32"},
        "constexprs": {"BLOCK": 1024},
        "options": {"num_warps": 4},
        "families": {"sm_90a": set(), "sm_100a": set()},
    },
}


def all_examples() -> list[DocExample]:
    return [e for name in DOCUMENTS for e in document_examples(name)]


def cases() -> list[Any]:
    return [pytest.param(e, t, id=f"{e.document}/{e.name}@{t}") for e in all_examples() for t in e.targets]


def nvrtc_cubin(source: str, target: str, name: str) -> tuple[bytes, str]:
    from cuda.bindings import nvrtc

    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    try:
        opts = [f"--gpu-architecture={target}".encode(), b"-std=c++17", b"-lineinfo"]
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = bytearray(size)
        nvrtc.nvrtcGetProgramLog(prog, log)
        text = log.decode(errors="replace").strip("\x00 \n")
        assert status == nvrtc.nvrtcResult.NVRTC_SUCCESS, f"NVRTC failed for {name} on {target}:\n{text}"
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = bytearray(size)
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        return bytes(cubin), text
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def ptxas_cubin(source: str, target: str, tmp: Path) -> tuple[bytes, str]:
    ptxas = tool("ptxas")
    assert ptxas, "ptxas not found (Triton's wheel ships one)"
    (tmp / "example.ptx").write_text(source)
    command = [ptxas, f"-arch={target}", "-v", str(tmp / "example.ptx"), "-o", str(tmp / "example.cubin")]
    proc = subprocess.run(command,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"ptxas failed on {target}:\n{proc.stderr}"
    return (tmp / "example.cubin").read_bytes(), proc.stderr


def triton_build(example: DocExample, target: str, tmp: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(PTX family counts, SASS family counts) of the example's kernel compiled offline for ``target``."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    build = TRITON_BUILDS[example.name]
    path = tmp / f"doc_{example.name.replace('-', '_')}.py"
    path.write_text(example.code)  # @triton.jit reads the source back, so the module lives in a file
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
        kernel = getattr(module, build["kernel"])
        constexprs = {**build["constexprs"], **build.get("target_constexprs", {}).get(target, {})}
        gpu = GPUTarget("cuda", TARGETS[target].triton_capability, 32)
        compiled = triton.compile(ASTSource(kernel, build["signature"], constexprs), target=gpu,
                                  options=build["options"])
    finally:
        sys.modules.pop(path.stem, None)
    counts = count_cubin(compiled.asm["cubin"])
    sass = {fam: sum(c.get(fam, 0) for c in counts.values()) for fam in next(iter(counts.values()))}
    return count_ptx(compiled.asm["ptx"]), sass


@pytest.mark.parametrize(("example", "target"), cases())
def test_example_builds_and_uses_its_instructions(example: DocExample, target: str, tmp_path: Path) -> None:
    if example.language == "python":
        ptx, sass = triton_build(example, target, tmp_path)
        expected = TRITON_BUILDS[example.name]["families"][target]
        missing = {f for f in expected if not sass.get(f)}
        assert not missing, f"{example.name} on {target}: no {missing} in the SASS (PTX counts {ptx})"
        return
    if example.language == "cuda":
        cubin, log = nvrtc_cubin(example.code, target, example.name)
    else:
        cubin, log = ptxas_cubin(example.code, target, tmp_path)
    assert "warning" not in log.lower(), f"{example.name} on {target} compiled with warnings:\n{log}"
    counts = count_cubin(cubin)
    assert counts, f"{example.name}: no kernel in the cubin"
    found = {fam for c in counts.values() for fam, n in c.items() if n}
    missing = EXPECTED[(example.document, example.name)] - found
    assert not missing, f"{example.name} on {target}: no {missing} in the SASS (found {sorted(found)})"


def test_every_example_is_checked_and_every_check_has_an_example() -> None:
    examples = all_examples()
    native = {(e.document, e.name) for e in examples if e.language != "python"}
    python = {e.name for e in examples if e.language == "python"}
    assert native == set(EXPECTED)
    assert python == set(TRITON_BUILDS)
    assert {e.document for e in examples} == set(DOCUMENTS)
    for e in examples:
        assert set(e.targets) <= set(TARGETS), e
        if e.language != "python":
            assert e.targets == (e.document,), f"{e.name}: an example of {e.document} builds for {e.document}"


def test_code_blocks_are_examples_or_marked_text() -> None:
    """A block in any other language would reach the model unchecked."""
    for name in DOCUMENTS:
        for lang, _attrs, _code, line in document_blocks(name):
            assert lang in ("cuda", "ptx", "python", "text"), f"documents/{name}.md:{line}: ```{lang} block"
