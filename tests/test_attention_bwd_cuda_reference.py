"""The hand-written CUDA backward of ptx/attention-bwd and ptx/attention-bwd-causal on a CPU.

Its kernels compile through the loader for sm_90a with the instruction families the tasks prove in the SASS,
without spills; its launches pass the loader's checks; both tasks name it as an extra reference. What a GPU
would show first if it were wrong is modelled in ``attention_bwd_model.py``: where every operand element of
each wgmma is read from shared memory (the descriptors as the kernel encodes them, against where TMA's
128-byte swizzle or the kernel's own stores put it), the register fragments, the causal mask and the dQ
reduction's addresses, run on whole heads and compared with the backward's math in float64.
"""

from __future__ import annotations

import re

import attention_bwd_model as model
import pytest
import torch
from reference_module import run_reference
from warpgym.env.judge.static import check_source
from warpgym.env.toolchain import attachments, loader
from warpgym.env.toolchain.disassemble import sass_opcodes
from warpgym.env.toolchain.registry import REGISTRY
from warpgym.tasks import get_task

TASKS = {"ptx/attention-bwd": "ptx/attention-bwd-cuda",
         "ptx/attention-bwd-causal": "ptx/attention-bwd-causal-cuda"}
SOURCE = "attention_bwd_wgmma.cu"
PROVEN = ("wgmma", "tma", "mbarrier", "setmaxnreg")
OPCODES = ("HGMMA.64x64x16.F32.BF16", "UTMALDG.2D", "UBLKCP", "USETMAXREG.TRY_ALLOC", "USETMAXREG.DEALLOC",
           "SYNCS.PHASECHK", "UTMAREDG.2D.ADD")
RS_HGMMA = re.compile(r"HGMMA\.64x128x16\.F32\.BF16 R\d+, R\d+, gdesc\[UR\d+\]\.tnspB")
"""dV += P^T dO and dK += dS^T Q: A from registers, B (dO, Q) from shared memory, transposed."""
TNSP_A = re.compile(r"HGMMA\.64x64x16\.F32\.BF16 R\d+, gdesc\[UR\d+\]\.tnspA\.tnspB")
"""dQ = dS K: dS^T as stored read back transposed."""
needs_tools = pytest.mark.skipif(loader.nvrtc_version() is None or loader.ptxas_path() is None,
                                 reason="NVRTC (pip install nvidia-cuda-nvrtc) or ptxas not available")


@pytest.fixture
def solution():
    """The reference's module executed as the worker runs it, for a task: its namespace."""
    def load(task_id: str) -> dict:
        candidate = get_task(task_id).solution_candidate(TASKS[task_id])
        return run_reference(candidate, "sm_90a", "attention-bwd-cuda.py")
    yield load
    attachments.clear()


def _loads(sass: str) -> dict[str, list[str]]:
    """The ordinary global load opcodes of each kernel in a module's SASS."""
    return {fn: sorted({op for op in ops if op.startswith("LDG")}) for fn, ops in sass_opcodes(sass).items()}


def test_both_tasks_name_it_and_one_source_serves_both():
    full = get_task("ptx/attention-bwd").solution_candidate(TASKS["ptx/attention-bwd"])
    causal = get_task("ptx/attention-bwd-causal").solution_candidate(TASKS["ptx/attention-bwd-causal"])
    for task_id, extra in TASKS.items():
        assert get_task(task_id).extra_solutions == (extra,)
    assert set(full.attachments) == {SOURCE} and causal.attachments == full.attachments
    assert full.source.count("\nCAUSAL = False\n") == 1
    assert causal.source == full.source.replace("\nCAUSAL = False\n", "\nCAUSAL = True\n")
    for candidate in (full, causal):
        report = check_source(candidate.source, "attention_bwd", ["q", "k", "v", "o", "lse", "do"], "cuda")
        assert report.ok, report.violations


@needs_tools
@pytest.mark.parametrize("task_id", list(TASKS))
def test_the_kernels_prove_hoppers_features_in_the_sass(solution, task_id):
    namespace = solution(task_id)
    config, kernels = namespace["CONFIG"], namespace["KERNELS"]
    main = kernels["attention_bwd_wgmma"]
    record = main.module.record
    assert config["defines"]["CAUSAL"] == int(task_id.endswith("causal"))
    assert [f for f in PROVEN if not main.info.sass_counts.get(f)] == [], record.log
    assert [op for op in OPCODES if op not in record.sass] == []
    assert len(RS_HGMMA.findall(record.sass)) >= 8 and len(TNSP_A.findall(record.sass)) >= 8
    assert "HMMA" not in record.sass   # one kind of tensor core: wgmma only
    # dQ leaves by TMA reduce-adds and the backward proper reads everything through TMA; the passes beside it
    # read o and do (delta, lse's scale) and the fp32 dQ (its conversion) by ordinary loads.
    assert "REDG.E" not in record.sass
    assert _loads(record.sass) == {"attention_bwd_wgmma": [], "bwd_convert_dq": ["LDG.E.128.CONSTANT"],
                                   "bwd_preprocess": ["LDG.E.64.CONSTANT", "LDG.E.CONSTANT"]}
    for kernel in kernels.values():
        assert kernel.info.spills == 0 and kernel.info.stack == 0, record.log
    for warning in ("C7515", "C7508", "C7510", "C7520"):   # wgmma serialised, setmaxnreg dropped
        assert warning not in record.log and not any(warning in w for w in record.warnings)
    # setmaxnreg moves registers within the launch's allocation: 168 a thread at 384 threads.
    assert main.info.registers == 168 and main.info.registers * namespace["THREADS"] <= 65536
    # The layout the kernel traps on and the size the host launches with are the same number.
    assert f".const .align 4 .u32 bwd_shared_bytes = {config['shared']};" in record.ptx


@needs_tools
@pytest.mark.parametrize("defines", [{"STAGES": 3}, {"EARLY_DV": 1}, {"DS_KMAJOR": 1}, {"DQ_TMA": 0},
                                     {"DQ_TMA": 0, "DQ_RED": 2}, {"DQ_TMA": 0, "DQ_RED": 0}, {"AUX_BULK": 1},
                                     {"Q_ROTATE": 1}])
def test_every_option_compiles_without_spills(solution, defines):
    config, kernels = solution("ptx/attention-bwd")["build"]("sm_90a", defines)
    main = kernels["attention_bwd_wgmma"]
    assert [f for f in PROVEN if not main.info.sass_counts.get(f)] == [] and main.info.spills == 0
    sass = main.module.record.sass
    assert f"bwd_shared_bytes = {config['shared']};" in main.module.record.ptx
    assert ("UTMAREDG.2D.ADD" in sass) == (defines.get("DQ_TMA", 1) == 1)
    loads = _loads(sass)
    if defines.get("AUX_BULK", 0) == 1:   # the passes beside the backward on bulk copies: lse's load is left
        assert loads["bwd_convert_dq"] == [] and loads["bwd_preprocess"] == ["LDG.E.CONSTANT"]
    else:
        assert loads["bwd_convert_dq"] == ["LDG.E.128.CONSTANT"]
        assert loads["bwd_preprocess"] == ["LDG.E.64.CONSTANT", "LDG.E.CONSTANT"]
    width = {0: "REDG.E.ADD.F32.", 1: "REDG.E.ADD.F32x2", 2: "REDG.E.ADD.F32x4"}.get(defines.get("DQ_RED", 1))
    assert (width in sass) == (defines.get("DQ_TMA", 1) == 0)


@needs_tools
def test_options_outside_the_kernels_layouts_are_refused(solution):
    build = solution("ptx/attention-bwd")["build"]
    with pytest.raises(loader.CompileError, match="DQ_RED"):
        build("sm_90a", {"DQ_RED": 3, "DQ_TMA": 0})
    with pytest.raises(loader.CompileError, match="DQ_TMA"):
        build("sm_90a", {"DQ_RED": 2})   # the reduce-add replaces the vector reductions
    with pytest.raises(loader.LoaderError, match="sm_90a"):
        build("sm_100a")


@needs_tools
def test_a_launch_passes_the_loaders_checks_and_stops_at_the_missing_gpu(solution):
    namespace = solution("ptx/attention-bwd-causal")
    q = torch.zeros(2, 3, 384, 128, dtype=torch.bfloat16)
    lse = torch.zeros(2, 3, 384)
    before = REGISTRY.launch_count
    with pytest.raises(loader.NoDeviceError):
        namespace["attention_bwd"](q, q, q, q, lse, q)
    assert REGISTRY.launch_count == before + 1   # the first of three launches, checked, then refused
    launch = REGISTRY.launches[-1]
    assert launch.kernel == "bwd_preprocess" and launch.grid == (2 * 3 * 384 // 8, 1, 1)
    config = namespace["CONFIG"]
    namespace["KERNELS"]["attention_bwd_wgmma"].check(4 * 32 * 32, 384, config["shared"])  # the bench grid
    assert config["shared"] > 3 * 48 * 1024
    with pytest.raises(ValueError, match="multiple of 128"):
        namespace["attention_bwd"](q[:, :, :64], q[:, :, :64], q[:, :, :64], q[:, :, :64], lse[..., :64],
                                   q[:, :, :64])


def test_the_model_mirrors_the_kernel_as_it_is():
    assert [line for line in model.MIRRORED if line not in model.SRC] == []


@pytest.mark.parametrize(("ds_kmajor", "dq_mode", "rotate"),
                         [(0, "red1", 0), (1, "red1", 0), (0, "red2", 0), (0, "tma", 0), (0, "tma", 1)])
@pytest.mark.parametrize("causal", [False, True])
def test_every_operand_and_reduction_lands_where_the_math_needs_it(monkeypatch, ds_kmajor, dq_mode, rotate,
                                                                  causal):
    """Whole heads of 256 keys through the modelled kernel: dq, dk and dv within bf16's rounding of the
    float64 backward (dS^T stored one way or the other; dQ added by v2 or v4 reductions or TMA's; each key
    block's query loop starting at block 0 or rotated)."""
    monkeypatch.setattr(model, "DS_KMAJOR", [ds_kmajor])
    monkeypatch.setattr(model, "DQ_MODE", [dq_mode])
    monkeypatch.setattr(model, "Q_ROTATE", [rotate])
    assert model.check(256, causal, seed=int(causal))


@pytest.mark.parametrize(("dq_mode", "broken"), [("red2", "no_shuffle"), ("tma", "unswizzled_staging")])
def test_the_model_fails_a_kernel_that_skips_a_step(monkeypatch, dq_mode, broken):
    monkeypatch.setattr(model, "DQ_MODE", [dq_mode])
    monkeypatch.setattr(model, "BREAK", [broken])
    try:
        passed = model.check(256, False)
    except AssertionError:
        passed = False
    assert not passed
