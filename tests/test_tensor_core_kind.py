"""A task that requires its architecture's tensor cores (wgmma on sm_90a, tcgen05 on sm_100a) gives the
arch-verified mark only to a candidate whose compiled kernels hold no other kind: an mma.sync path beside the
wgmma one could do the timed work at a rate no CUDA core reaches while the profiled call runs wgmma."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from warpgym.env.candidate import Candidate
from warpgym.env.judge import tensor_core_kind
from warpgym.env.judge.options import EvalOptions
from warpgym.env.judge.result import EvalResult, KernelReport
from warpgym.env.toolchain import loader
from warpgym.env.toolchain.families import FAMILIES, count_ptx
from warpgym.tasks import get_task

needs_tools = pytest.mark.skipif(loader.nvrtc_version() is None or loader.ptxas_path() is None,
                                 reason="NVRTC (pip install nvidia-cuda-nvrtc) or ptxas not available")

MMA_SYNC_GEMM = (Path(__file__).parent / "data" / "mma_sync_gemm.cu").read_text()
"""C = A B^T on mma.sync (m16n8k16), one warp per 16 x 8 tile; KERNEL stands for its name."""


def _with_fallback(reference: Candidate, name: str) -> Candidate:
    """The reference and a second module, built at import, whose kernel computes the same product on
    mma.sync; the reference's entrypoint never calls it here."""
    source = MMA_SYNC_GEMM.replace("KERNEL", name)
    return Candidate(reference.source + f'\n_MMA = loader.load_cuda(r"""{source}""", name="fallback")\n',
                     reference.attachments)


@pytest.fixture(scope="module")
def reference() -> Candidate:
    return get_task("ptx/gemm-bf16").solution_candidate("ptx/gemm-bf16-cuda")


def test_wmma_and_sparse_mma_count_as_mma_sync_and_wgmma_does_not():
    ptx = ("wmma.mma.sync.aligned.row.col.m16n16k16.f32.f16.f16.f32 {a}, {b}, {c}, {d};\n"
           "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 {a}, {b}, {c}, e, 0x0;\n"
           "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {d}, x, y, p, 1, 1, 0, 0;\n")
    counts = count_ptx(ptx)
    assert counts.get("mma.sync") == 2 and counts.get("wgmma") == 1
    assert FAMILIES["mma.sync"].sass.match("HMMA.16816.F32.BF16")


@needs_tools
@pytest.mark.parametrize("name", ["mma_fallback", "gemm_bf16_wgmma"])
def test_an_mma_sync_kernel_beside_the_wgmma_one_withdraws_the_mark(cpu_evaluator, reference, name):
    """Under its own name, or under the name of the reference's wgmma kernel (a second module defining it):
    either way its instructions are counted and named."""
    task = get_task("ptx/gemm-bf16")
    result = cpu_evaluator.evaluate(task, _with_fallback(reference, name), EvalOptions(shape_sets=("dev",)))
    assert result.compiled and not result.violations, result.feedback
    assert result.required_features_met is True  # wgmma, TMA, mbarrier, setmaxnreg are all there
    assert result.arch_verified is None  # a CPU runs nothing: no mark to withdraw, the other kind is named
    assert result.other_tensor_cores == {"mma.sync": [name]}
    assert "Tensor cores of another kind compiled in: mma.sync in " + name in result.feedback
    if name == "gemm_bf16_wgmma":
        [kernel] = result.kernels
        assert kernel.builds == ["0:gemm_bf16_wgmma", "1:fallback"]
        assert kernel.families["wgmma"]["sass"] > 0 and kernel.families["mma.sync"]["sass"] > 0


@needs_tools
def test_the_hand_written_reference_holds_no_other_kind(cpu_evaluator, reference):
    result = cpu_evaluator.evaluate(get_task("ptx/gemm-bf16"), reference, EvalOptions(shape_sets=("dev",)))
    assert result.required_features_met is True and result.other_tensor_cores is None
    assert result.arch_verified is None  # the mark needs a GPU run (tests/test_required_features.py)
    assert "another kind" not in result.feedback


def _judged(required: tuple[str, ...], target: str, kernels: dict[str, dict[str, int]],
            arch_verified: bool | None = True) -> EvalResult:
    result = EvalResult(task="t", target=target, device="cuda", arch_verified=arch_verified,
                        kernels=[KernelReport(name=n, target=target,
                                              families={f: {"ptx": 0, "sass": c} for f, c in fams.items()})
                                 for n, fams in kernels.items()])
    ev = SimpleNamespace(task=SimpleNamespace(required_features={target: required}), result=result,
                         options=EvalOptions(target=target))
    tensor_core_kind.judge(ev)
    return result


def test_each_architecture_names_its_own_kind_and_a_generic_requirement_takes_any():
    hopper = _judged(("wgmma", "tma"), "sm_90a", {"main": {"wgmma": 8}, "tail": {"mma.sync": 4}})
    assert hopper.arch_verified is False and hopper.other_tensor_cores == {"mma.sync": ["tail"]}
    blackwell = _judged(("tcgen05", "tma"), "sm_100a", {"main": {"tcgen05": 8, "mma.sync": 1}})
    assert blackwell.arch_verified is False and blackwell.other_tensor_cores == {"mma.sync": ["main"]}
    assert _judged(("mma",), "sm_90a", {"main": {"mma.sync": 8}}).arch_verified is True
    assert _judged(("tma",), "sm_90a", {"main": {"mma.sync": 8}}).arch_verified is True
    honest = _judged(("wgmma", "tma"), "sm_90a", {"main": {"wgmma": 8}, "epilogue": {"tma": 2}})
    assert honest.arch_verified is True and honest.other_tensor_cores is None


def test_a_kernel_of_another_target_is_not_this_targets_code():
    result = EvalResult(task="t", target="sm_90a", device="cuda", arch_verified=True, kernels=[
        KernelReport(name="k", target="sm_100a", families={"mma.sync": {"ptx": 3, "sass": 3}})])
    ev = SimpleNamespace(task=SimpleNamespace(required_features={"sm_90a": ("wgmma",)}), result=result,
                         options=EvalOptions(target="sm_90a"))
    tensor_core_kind.judge(ev)
    assert result.arch_verified is True


def test_a_verdict_without_the_mark_stays_without_it_and_the_line_reads_once():
    result = _judged(("wgmma",), "sm_90a", {"k": {"wgmma": 1, "mma.sync": 2}}, arch_verified=None)
    assert result.arch_verified is None and result.other_tensor_cores == {"mma.sync": ["k"]}
    lines = tensor_core_kind.feedback_lines(result.other_tensor_cores)
    assert len(lines) == 1 and "no arch-verified mark" in lines[0]
