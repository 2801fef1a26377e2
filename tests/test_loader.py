"""The CUDA/PTX loader on a CPU: NVRTC + ptxas compilation for sm_90a and sm_100a, the compiler's
report, static instruction counts from real cubins, and every way a build or a launch fails."""
# ruff: noqa: E501  (embedded CUDA sources and tool output keep their own line lengths)

from __future__ import annotations

import json
import re

import pytest
import torch
from warpgym.env.toolchain import loader, ptx, ptxas, targets

pytestmark = pytest.mark.skipif(loader.nvrtc_version() is None or loader.ptxas_path() is None,
                                reason="NVRTC (pip install nvidia-cuda-nvrtc) or ptxas not available")

SCALE = r"""
#include <cuda_bf16.h>
extern "C" __global__ void __launch_bounds__(128) scale(__nv_bfloat16* x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = __float2bfloat16(__bfloat162float(x[i]) * s);
}
"""

# TMA load completing on an mbarrier, then one wgmma reading the tile: compiles for sm_90a only.
HOPPER = r"""
#include <cuda_bf16.h>
struct alignas(64) TensorMap { unsigned long long words[16]; };
extern "C" __global__ void __launch_bounds__(128) hopper(const __grid_constant__ TensorMap tmap, float* out) {
  __shared__ alignas(1024) __nv_bfloat16 tile[64 * 64];
  __shared__ alignas(8) unsigned long long bar;
  unsigned bar_addr = (unsigned)__cvta_generic_to_shared(&bar);
  unsigned tile_addr = (unsigned)__cvta_generic_to_shared(tile);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_addr));
    asm volatile("fence.proxy.async.shared::cta;");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar_addr), "r"(64 * 64 * 2));
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(tile_addr), "l"(&tmap), "r"(0), "r"(0), "r"(bar_addr) : "memory");
  }
  asm volatile("{\n.reg .pred done;\nWAIT_%=:\nmbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
               "@!done bra WAIT_%=;\n}" :: "r"(bar_addr) : "memory");
  unsigned long long desc = ((tile_addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32);
  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "l"(desc), "l"(desc), "r"(0));
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  out[threadIdx.x] = d0 + d1 + d2 + d3;
}
"""

# Tensor-memory allocation: compiles for sm_100a only.
BLACKWELL = r"""
extern "C" __global__ void blackwell(unsigned* out) {
  __shared__ unsigned taddr;
  unsigned slot = (unsigned)__cvta_generic_to_shared(&taddr);
  if (threadIdx.x < 32) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 32;" :: "r"(slot) : "memory");
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
  }
  __syncthreads();
  unsigned t = taddr;
  if (threadIdx.x < 32) {
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 32;" :: "r"(t) : "memory");
  }
  out[threadIdx.x] = t;
}
"""


@pytest.fixture(autouse=True)
def _clean_registry():
    loader.REGISTRY.clear()
    loader.set_default_target(None)
    yield
    loader.REGISTRY.clear()


def test_cuda_module_is_compiled_reported_and_recorded():
    module = loader.load_cuda(SCALE, name="scale", defines={"UNUSED": 1}, max_registers=64)
    record = module.record
    assert loader.REGISTRY.modules == [record]
    assert record.language == "cuda" and record.target == "sm_90a"
    assert ".target sm_90a" in record.ptx and record.cubin and record.cubin[:4] == b"\x7fELF"
    assert record.compiler.startswith("nvrtc ") and "ptxas" in record.compiler
    assert "--maxrregcount=64" in record.options and "-DUNUSED=1" in record.options
    info = record.kernels["scale"]
    assert [p.type for p in info.params] == ["u64", "f32", "u32"]
    assert info.registers and info.registers <= 64 and info.spills == 0
    assert info.maxntid == (128, 1, 1)
    assert "Function : scale" in record.sass
    wire = loader.modules_report()
    assert json.loads(json.dumps(wire))[0]["kernels"][0]["name"] == "scale"
    assert module.kernel("scale").name == "scale"
    with pytest.raises(LookupError, match="has no kernel 'nope'.*scale"):
        module.kernel("nope")


def test_hopper_features_show_in_ptx_and_sass_for_sm90a():
    record = loader.load_cuda(HOPPER, name="hopper", target="sm_90a").record
    info = record.kernels["hopper"]
    assert info.ptx_counts["wgmma"] == 1 and info.ptx_counts["wgmma-sync"] == 3  # the MMA; fence, commit, wait
    assert info.ptx_counts["tma"] == 1 and info.ptx_counts["mbarrier"] >= 3
    assert info.sass_counts["wgmma"] >= 1, "HGMMA in SASS"
    assert info.sass_counts["tma"] >= 1, "UTMALDG in SASS"
    assert info.sass_counts["mbarrier"] >= 1, "SYNCS in SASS"
    assert info.sass_counts["fence.proxy.async"] >= 1
    assert info.sass_counts["tcgen05"] == 0
    assert [p.size for p in info.params] == [128, 8] and info.params[0].array


def test_blackwell_features_show_for_sm100a():
    record = loader.load_cuda(BLACKWELL, name="blackwell", target="sm_100a").record
    info = record.kernels["blackwell"]
    assert ".target sm_100a" in record.ptx
    assert info.ptx_counts["tcgen05-tmem"] == 3 and info.ptx_counts["tcgen05"] == 0  # alloc and frees, no MMA
    assert info.sass_counts["tcgen05-tmem"] >= 1 and info.sass_counts["wgmma"] == 0


def test_wgmma_for_sm100a_is_a_ptxas_error():
    with pytest.raises(loader.CompileError) as err:
        loader.load_cuda(HOPPER, name="hopper", target="sm_100a")
    assert err.value.stage == "ptxas" and "wgmma" in err.value.log
    assert loader.REGISTRY.modules == []


def test_tcgen05_for_sm90a_is_a_ptxas_error():
    with pytest.raises(loader.CompileError) as err:
        loader.load_cuda(BLACKWELL, name="blackwell", target="sm_90a")
    assert err.value.stage == "ptxas" and "tcgen05" in err.value.log


def test_nvrtc_error_names_the_line():
    with pytest.raises(loader.CompileError) as err:
        loader.load_cuda('extern "C" __global__ void f(int* x) {\n  x[0] = ;\n}', name="broken")
    assert err.value.stage == "nvrtc"
    assert "broken.cu(2)" in str(err.value) and "expected an expression" in str(err.value)


def test_ptxas_error_on_bad_ptx():
    ptx = ".version 8.7\n.target sm_90a\n.address_size 64\n.visible .entry k() {\n  bogus.instr %r1;\n  ret;\n}\n"
    with pytest.raises(loader.CompileError) as err:
        loader.load_ptx(ptx, name="bad", target="sm_90a")
    assert err.value.stage == "ptxas" and "bogus" in err.value.log


def test_ptx_target_mismatch_is_explained():
    ptx = ".version 8.7\n.target sm_90a\n.address_size 64\n.visible .entry k() { ret; }\n"
    with pytest.raises(loader.CompileError, match="declares `.target sm_90a`"):
        loader.load_ptx(ptx, name="k", target="sm_100a")


def test_raw_ptx_module_and_default_target():
    ptx = loader.load_cuda(SCALE, name="scale").record.ptx
    loader.set_default_target("sm_90a")
    module = loader.load_ptx(ptx, name="raw")
    assert module.record.language == "ptx" and module.record.target == "sm_90a"
    assert module.names == ["scale"]
    with pytest.raises(ValueError, match="unknown target"):
        loader.set_default_target("sm_80")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_launch_is_checked_then_refused_without_a_gpu():
    kernel = loader.load_cuda(SCALE, name="scale").kernel("scale")
    x = torch.zeros(256, dtype=torch.bfloat16)
    with pytest.raises(loader.NoDeviceError, match="no CUDA GPU"):
        kernel(x, 2.0, 256, grid=2, block=128)
    assert loader.REGISTRY.launch_count == 1
    launch = loader.REGISTRY.launches[0]
    assert (launch.grid, launch.block, launch.ran) == ((2, 1, 1), (128, 1, 1), False)


def test_bad_launches_fail_before_reaching_the_gpu():
    kernel = loader.load_cuda(SCALE, name="scale").kernel("scale")
    x = torch.zeros(256, dtype=torch.bfloat16)
    with pytest.raises(loader.LaunchError, match=r"232448 \(227 KB\)"):
        kernel(x, 2.0, 256, grid=2, block=128, shared_mem=240 * 1024)
    with pytest.raises(loader.LaunchError, match="at most 128 threads"):
        kernel(x, 2.0, 256, grid=1, block=256)
    with pytest.raises(loader.LaunchError, match="takes 3 parameters"):
        kernel(x, 2.0, grid=1, block=128)
    with pytest.raises(loader.LaunchError, match="a float was given for a u32"):
        kernel(x, 2.0, 1.5, grid=1, block=128)
    with pytest.raises(loader.LaunchError, match="does not fit in 32 bits"):
        kernel(x, 2.0, 1 << 40, grid=1, block=128)
    with pytest.raises(loader.LaunchError, match="not a multiple of cluster"):
        kernel(x, 2.0, 256, grid=3, block=128, cluster=2)
    with pytest.raises(loader.LaunchError, match="grid"):
        kernel(x, 2.0, 256, grid=(0,), block=128)
    assert loader.REGISTRY.launch_count == 0


def test_nvrtc_ptx_newer_than_ptxas_is_assembled_as_the_older_isa():
    """NVRTC from a newer CUDA than the ptxas found: its .version is lowered, and the log says so;
    PTX a candidate wrote itself is never rewritten."""
    ptx = loader.load_cuda(SCALE, name="scale").record.ptx
    future = re.sub(r"^\.version \S+", ".version 99.9", ptx, count=1, flags=re.M)
    record = ptxas.assemble(future, name="scale", target="sm_90a", language="cuda", flags=[], nvrtc_log="",
                            options=[])
    assert record.cubin and any("newer than this ptxas accepts" in w for w in record.warnings)
    with pytest.raises(loader.CompileError, match=r"Unsupported \.version 99\.9"):
        loader.load_ptx(future, name="scale", target="sm_90a")


def test_tensor_map_is_reused_only_for_the_same_view():
    t = torch.zeros(256, 128, dtype=torch.bfloat16)
    first = loader.tensor_map(t, (64, 64))
    assert loader.tensor_map(t, (64, 64)) is first
    assert loader.tensor_map(t, (32, 64)) is not first
    assert loader.tensor_map(t[:128], (64, 64)).shape == (128, 128)
    other = torch.zeros(256, 128, dtype=torch.bfloat16)
    assert loader.tensor_map(other, (64, 64)) is not first
    with pytest.raises(loader.LaunchError):  # a bad view is refused every time, never cached
        loader.tensor_map(t, (512, 64))
    with pytest.raises(loader.LaunchError):
        loader.tensor_map(t, (512, 64))


def test_tensor_map_is_validated():
    t = torch.zeros(256, 128, dtype=torch.bfloat16)
    tmap = loader.tensor_map(t, (64, 64), swizzle=128)
    assert len(tmap.data) == 128 and tmap.box == (64, 64)
    if not torch.cuda.is_available():
        assert tmap.placeholder
    with pytest.raises(loader.LaunchError, match="more than the 64-byte swizzle span"):
        loader.tensor_map(t, (64, 64), swizzle=64)
    with pytest.raises(loader.LaunchError, match="box dim 0 = 512"):
        loader.tensor_map(t, (512, 64))
    with pytest.raises(loader.LaunchError, match="not a multiple of 16"):
        loader.tensor_map(torch.zeros(16, 20, dtype=torch.bfloat16), (8, 8), swizzle=0)
    with pytest.raises(loader.LaunchError, match="not contiguous"):
        loader.tensor_map(t.t(), (64, 64))
    kernel = loader.load_cuda(HOPPER, name="hopper").kernel("hopper")
    with pytest.raises(loader.LaunchError, match="TensorMap goes to a 128-byte"):
        kernel(tmap, tmap, grid=1, block=128)


def test_parse_ptxas_report_keeps_warnings_and_resources():
    text = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'gemm' for 'sm_90a'
ptxas info    : Function properties for gemm
    8 bytes stack frame, 16 bytes spill stores, 24 bytes spill loads
ptxas info    : Used 168 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]
ptxas /tmp/x/gemm.ptx, line 120; warning : Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient register resources for the wgmma pipeline in the function 'gemm'
"""
    kernels, warnings = loader.parse_ptxas_report(text)
    assert kernels["gemm"] == {"registers": 168, "barriers": 1, "shared": 1024, "stack": 8, "spill_stores": 16,
                               "spill_loads": 24}
    assert len(warnings) == 1 and "serialized" in warnings[0]


def test_parse_entries_reads_triton_style_parameters():
    text = """.visible .entry k(
	.param .align 64 .b8 k_param_0[128],
	.param .u32 k_param_1,
	.param .u64 .ptr .global .align 1 k_param_2,
	.param .f32 k_param_3
)
.reqntid 256
{ ret; }"""
    params = loader.parse_entries(text)["k"]
    assert [(p.type, p.size, p.array, p.pointer) for p in params] == [
        ("b8", 128, True, False), ("u32", 4, False, False), ("u64", 8, False, True), ("f32", 4, False, False)]
    assert ptx.launch_bounds(text, "k") == ((256,), None)


def test_one_target_table_answers_every_question_about_a_target():
    from warpgym.env.worker.triton_launches import target_capability
    from warpgym.prompts import SPECS
    from warpgym.tasks import get_task

    assert targets.for_capability(9) == "sm_90a" and targets.for_capability(10, 0) == "sm_100a"
    assert targets.for_capability(9, 1) is None and targets.for_capability(8) is None
    with pytest.raises(ValueError, match="builds for sm_90a, sm_100a"):
        targets.check("sm_80")
    assert [target_capability(t) for t in targets.NAMES] == [90, 100]
    assert [targets.TARGETS[t].virtual_architecture for t in targets.NAMES] == ["compute_90a", "compute_100a"]
    assert set(SPECS) == set(targets.TARGETS)
    assert get_task("ptx/gemm-bf16").required_features == {"sm_90a": ("wgmma", "tma"), "sm_100a": ("tcgen05", "tma")}


def test_a_build_with_an_empty_log_leaves_python_s_shared_bytes_alone():
    """NVRTC writes its log and PTX into the buffers it is given; an empty log is one NUL byte, and a
    one-byte ``bytes`` is CPython's shared object: written into, every b" " in the process became b"\\x00"
    (seen as Ray failing to decode its own messages in a process that had compiled CUDA)."""
    from warpgym.env.toolchain.nvrtc import compile_cuda

    ptx_text, log, _ = compile_cuda('extern "C" __global__ void quiet() {}', "quiet", "sm_90a",
                                    ["--gpu-architecture=sm_90a"], [])
    assert log == "" and ".entry quiet" in ptx_text
    assert b" " == bytes([32]) and b"a b".split(b" ") == [b"a", b"b"]
