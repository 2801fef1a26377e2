"""The hand-written CUDA reference of ptx/gemm-bf16 on a CPU: its kernels compile through the loader for
sm_90a and sm_100a with the instruction families the task proves in the SASS (wgmma, TMA, mbarrier and
setmaxnreg on Hopper; tcgen05 and TMA on Blackwell), its launches pass the loader's checks, and it is the
task's second reference, which ``suite check`` checks beside the default one."""

from __future__ import annotations

import json

import pytest
import torch
from reference_module import run_reference
from warpgym.env.judge.static import check_source
from warpgym.env.toolchain import attachments, loader
from warpgym.env.toolchain.registry import REGISTRY, KernelInfo, ModuleRecord
from warpgym.experiments.cli import main
from warpgym.experiments.cli.suite_cmd import markdown_table
from warpgym.tasks import get_task

EXTRA = "ptx/gemm-bf16-cuda"
SOURCES = {"sm_90a": "gemm_wgmma.cu", "sm_100a": "gemm_tcgen05.cu"}
PROVEN = {"sm_90a": ("wgmma", "tma", "mbarrier", "setmaxnreg"), "sm_100a": ("tcgen05", "tma", "mbarrier")}
"""What each target's kernel must show in its SASS (not only its PTX: ptxas may drop an instruction)."""
OPCODES = {"sm_90a": ("HGMMA.64x256x16.F32.BF16", "UTMALDG.2D", "USETMAXREG.TRY_ALLOC", "USETMAXREG.DEALLOC",
                      "SYNCS.PHASECHK"),
           "sm_100a": ("UTCHMMA", "UTCATOMSWS", "LDTM", "UTMALDG.2D", "SYNCS.PHASECHK")}
needs_tools = pytest.mark.skipif(loader.nvrtc_version() is None or loader.ptxas_path() is None,
                                 reason="NVRTC (pip install nvidia-cuda-nvrtc) or ptxas not available")


def missing_in_sass(kernel: loader.Kernel) -> dict[str, str]:
    """Each family the kernel's target needs that its SASS lacks, with what its PTX had."""
    info: KernelInfo = kernel.info
    return {f: f"ptx {info.ptx_counts.get(f, 0)}, sass 0" for f in PROVEN[kernel.module.record.target]
            if not info.sass_counts.get(f)}


@pytest.fixture(scope="module")
def candidate():
    return get_task("ptx/gemm-bf16").solution_candidate(EXTRA)


def _executor(candidate, filename: str):
    """A function running the reference's module as the worker runs it, for a target: its namespace."""
    return lambda target: run_reference(candidate, target, filename)


@pytest.fixture
def solution(candidate):
    yield _executor(candidate, "gemm-bf16-cuda.py")
    attachments.clear()


def _record(kernel: loader.Kernel) -> ModuleRecord:
    return kernel.module.record


def _assert_proven(kernel: loader.Kernel, config: dict, opcodes: tuple[str, ...]) -> None:
    """What both dtypes' kernels must show: every family and opcode in the SASS, no spills, no warning that
    ptxas serialised wgmma or dropped setmaxnreg, and on sm_90a registers that fit the block."""
    record = _record(kernel)
    assert missing_in_sass(kernel) == {}, record.log
    assert [op for op in opcodes if op not in record.sass] == []
    assert kernel.info.spills == 0 and kernel.info.stack == 0
    for warning in ("C7515", "C7508", "C7510"):
        assert warning not in record.log and not any(warning in w for w in record.warnings)
    if record.target == "sm_90a":
        assert kernel.info.registers * config["threads"] <= 65536


def test_it_is_the_tasks_second_reference_and_the_default_stays(candidate):
    task = get_task("ptx/gemm-bf16")
    assert task.extra_solutions == (EXTRA,)
    assert set(candidate.attachments) == set(SOURCES.values())
    assert all(name.endswith(".ptx") for name in task.solution_candidate().attachments)
    with pytest.raises(KeyError, match=f"no extra reference solution 'ptx/gemm-bf16'; it has: {EXTRA}"):
        task.solution_candidate("ptx/gemm-bf16")
    report = check_source(candidate.source, "gemm", ["a", "b"], "cuda")
    assert report.ok, report.violations


@needs_tools
@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_the_kernel_proves_its_targets_features_in_the_sass(solution, target):
    namespace = solution(target)
    kernel, config = namespace["KERNEL"], namespace["CONFIG"]
    record = _record(kernel)
    assert record.target == target and record.ptx.count(".entry") == 1
    _assert_proven(kernel, config, OPCODES[target])
    if target == "sm_90a":
        assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in record.ptx
        assert "setmaxnreg.dec.sync.aligned.u32 40" in record.ptx
        assert "setmaxnreg.inc.sync.aligned.u32 232" in record.ptx
    else:
        assert "tcgen05.mma.cta_group::1.kind::f16" in record.ptx
        assert "tcgen05.alloc" in record.ptx and "tcgen05.dealloc" in record.ptx


@needs_tools
@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_a_launch_passes_the_loaders_checks_and_stops_at_the_missing_gpu(solution, target):
    namespace = solution(target)
    a = torch.zeros(272, 336, dtype=torch.bfloat16)
    b = torch.zeros(208, 336, dtype=torch.bfloat16)
    before = REGISTRY.launch_count
    with pytest.raises(loader.NoDeviceError):
        namespace["gemm"](a, b)
    assert REGISTRY.launch_count == before + 1
    launch = REGISTRY.launches[-1]
    config = namespace["CONFIG"]
    assert launch.kernel == config["kernel"] and launch.block == (config["threads"], 1, 1)
    assert launch.grid == (1, 1, 1)  # 3 x 1 tiles of 128 x 256 on the single "SM" a CPU run assumes
    assert launch.shared_mem == config["shared"] > 4 * 48 * 1024
    namespace["KERNEL"].check(132, config["threads"], config["shared"])  # an H200's grid: within the limits


@needs_tools
def test_a_setmaxnreg_that_ptxas_dropped_is_missing_and_other_tiles_still_prove_it(solution, candidate):
    """Without a register cap at entry ptxas drops setmaxnreg (C7508): the PTX has it, the SASS does not.
    The same source with 128-wide tiles and no wgmma left in flight is honest and passes."""
    namespace = solution("sm_90a")
    source = candidate.attachments[SOURCES["sm_90a"]]
    assert source.count("__launch_bounds__(384, 1)") == 1
    dropped = loader.load_cuda(source.replace("__launch_bounds__(384, 1)", ""), name="uncapped",
                               target="sm_90a").kernel("gemm_bf16_wgmma")
    assert missing_in_sass(dropped) == {"setmaxnreg": "ptx 2, sass 0"}
    assert "C7508" in _record(dropped).log
    config, narrow = namespace["build"]("sm_90a", {"BN": 128, "INFLIGHT": 0, "STAGES": 6})
    assert missing_in_sass(narrow) == {} and "HGMMA.64x128x16.F32.BF16" in _record(narrow).sass
    assert config["shared"] == 6 * 32 * 1024 + 1024 + 8 * 12 + 16


def test_the_markdown_table_lists_extra_references_but_keeps_them_out_of_the_category_means():
    rows = [{"task": "ptx/gemm-bf16", "reference": None, "category": "ptx", "correct": True,
             "speedup": {"eager": 0.5}},
            {"task": "ptx/gemm-bf16", "reference": EXTRA, "category": "ptx", "correct": True,
             "speedup": {"eager": 2.0}}]
    table = markdown_table(rows)
    assert "| ptx | 1 | 1 | 0.50x | - | 1 |" in table
    assert f"| ptx/gemm-bf16 ({EXTRA}) | yes | 2.00x |" in table


@needs_tools
def test_suite_check_checks_both_references_and_resumes_by_reference(tmp_path, capsys):
    log = tmp_path / "rows.jsonl"
    argv = ["suite", "check", "--device", "cpu", "--task", "ptx/gemm-bf16", "--shapes", "dev",
            "--jsonl", str(log)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["task"], r["reference"], r["ok"], r["compiled"]) for r in rows] == [
        ("ptx/gemm-bf16", None, True, True), ("ptx/gemm-bf16", EXTRA, True, True)]
    assert f"ptx/gemm-bf16 ({EXTRA})" in out and "2 of 2 reference solutions pass" in out
    assert main([*argv, "--no-extra"]) == 0
    assert "resuming: 1 tasks already" in capsys.readouterr().out
    assert main(argv) == 0
    assert "resuming: 2 tasks already" in capsys.readouterr().out and len(log.read_text().splitlines()) == 2


FP8_EXTRA = "ptx/gemm-fp8-cuda"
FP8_OPCODES = {"sm_90a": ("QGMMA.64x256x32.F32.E4M3.E4M3", "UTMALDG.2D", "USETMAXREG.TRY_ALLOC",
                          "SYNCS.PHASECHK"),
               "sm_100a": ("UTCQMMA", "LDTM", "UTMALDG.2D", "SYNCS.PHASECHK")}


@pytest.fixture
def fp8_solution():
    yield _executor(get_task("ptx/gemm-fp8").solution_candidate(FP8_EXTRA), "gemm-fp8-cuda.py")
    attachments.clear()


def test_the_fp8_reference_shares_the_bf16_sources():
    bf16 = get_task("ptx/gemm-bf16").solution_candidate(EXTRA)
    fp8 = get_task("ptx/gemm-fp8").solution_candidate(FP8_EXTRA)
    assert get_task("ptx/gemm-fp8").extra_solutions == (FP8_EXTRA,)
    assert dict(fp8.attachments) == dict(bf16.attachments)
    report = check_source(fp8.source, "gemm_fp8", ["a", "b", "scale_a", "scale_b"], "cuda")
    assert report.ok, report.violations


@needs_tools
@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_the_fp8_kernel_runs_e4m3_tensor_core_instructions_and_proves_them_in_the_sass(fp8_solution, target):
    namespace = fp8_solution(target)
    kernel, config = namespace["KERNEL"], namespace["CONFIG"]
    record = _record(kernel)
    assert record.target == target and config["kernel"].startswith("gemm_fp8_")
    _assert_proven(kernel, config, FP8_OPCODES[target])
    assert "BF16" not in "".join(line for line in record.sass.splitlines() if "MMA" in line)
    if target == "sm_90a":
        assert "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3" in record.ptx
    else:
        assert "tcgen05.mma.cta_group::1.kind::f8f6f4" in record.ptx


@needs_tools
def test_an_fp8_launch_passes_the_loaders_checks_with_the_scales_and_stops_at_the_missing_gpu(fp8_solution):
    namespace = fp8_solution("sm_90a")
    a = torch.zeros(272, 336, dtype=torch.float8_e4m3fn)
    b = torch.zeros(208, 336, dtype=torch.float8_e4m3fn)
    scale = torch.ones(1)
    before = REGISTRY.launch_count
    with pytest.raises(loader.NoDeviceError):
        namespace["gemm_fp8"](a, b, scale, scale)
    assert REGISTRY.launch_count == before + 1
    launch, config = REGISTRY.launches[-1], namespace["CONFIG"]
    assert launch.kernel == "gemm_fp8_wgmma" and launch.grid == (1, 1, 1)
    assert launch.shared_mem == config["shared"] == 4 * (128 + 256) * 128 + 1024 + 8 * 8 + 16
    namespace["KERNEL"].check(132, config["threads"], config["shared"])
