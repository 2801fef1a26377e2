"""The work the profiled call's instructions did (judge/work.py), and the instruction stage's use of it.

The reports under tests/data/ncu are Nsight Compute's for the ptx references on the H200 (2026-12-03,
largest dev case, ``WARPGYM_NCU_DUMP``). The decoys add rows to them the way a candidate would: a token
wgmma beside an FFMA product, a full-size wgmma on scratch data beside it, operands read by plain loads.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import torch
from warpgym.env import EvalOptions, Evaluator
from warpgym.env.judge import inspection, profile
from warpgym.env.judge.instructions import FAMILIES, FEATURES
from warpgym.env.judge.plan import Check
from warpgym.env.judge.profile import DriverRun, KernelProfile, SassRow
from warpgym.env.judge.result import EvalResult, KernelReport
from warpgym.env.judge.work import (
    ARITHMETIC_FLOPS,
    ExecutedWork,
    executed_work,
    load_width,
    shortfalls,
    tensor_flops,
)
from warpgym.env.protocol.messages import RunReply
from warpgym.env.toolchain import loader
from warpgym.env.toolchain.disassemble import disassemble, sass_opcodes
from warpgym.env.toolchain.nvrtc import compile_cuda
from warpgym.env.toolchain.ptxas import assemble
from warpgym.tasks import case_label, get_task

DATA = Path(__file__).parent / "data" / "ncu"
REFERENCES = {"gemm-bf16": "ptx/gemm-bf16", "gemm-fp8-cuda": "ptx/gemm-fp8",
              "attention-fwd": "ptx/attention-fwd", "attention-bwd": "ptx/attention-bwd"}


def _report(name: str) -> list[KernelProfile]:
    return profile.parse_ncu_source_csv(gzip.decompress((DATA / f"{name}.csv.gz").read_bytes()).decode())


def _case(task_id: str) -> dict:
    task = get_task(task_id)
    return max(task.cases("dev"), key=task.flops)


def _judge_work(task_id: str, kernels: list[KernelProfile]) -> tuple[dict[str, str], list[str], ExecutedWork]:
    task, case = get_task(task_id), _case(task_id)
    work = executed_work(k.rows for k in kernels)
    missing, unmeasured = shortfalls(task.required_features["sm_90a"], FEATURES, work, task.flops(case),
                                     task.bytes(case))
    return missing, unmeasured, work


def _row(opcode: str, threads: int) -> SassRow:
    return SassRow("0x0", opcode + " R0, R1, R2", opcode, threads // 32, threads)


@pytest.mark.parametrize("name", list(REFERENCES))
def test_every_reference_does_its_task_on_the_required_instructions(name):
    task_id = REFERENCES[name]
    missing, unmeasured, work = _judge_work(task_id, _report(name))
    assert missing == {} and unmeasured == []
    task, case = get_task(task_id), _case(task_id)
    assert work.tensor_flops["wgmma"] >= task.flops(case) and work.other_flops < 0.02 * task.flops(case)
    assert work.load_bytes < 0.3 * task.bytes(case)


def test_the_measured_figures_are_the_tiles_the_references_run():
    """GEMM 512x384x640 on 128x256 tiles pads N to 512: exactly 4/3 of the flops. Attention forward does its
    two products once; the shipped backward kernel does seven products per block pair, 7/5 of five."""
    for name, expected in (("gemm-bf16", 4 / 3), ("gemm-fp8-cuda", 4 / 3), ("attention-fwd", 1.0),
                           ("attention-bwd", 1.4)):
        task_id = REFERENCES[name]
        work = executed_work(k.rows for k in _report(name))
        assert work.tensor_flops["wgmma"] / get_task(task_id).flops(_case(task_id)) == pytest.approx(expected)
    delta = executed_work([next(k for k in _report("attention-bwd") if k.name == "attn_bwd_delta").rows])
    case = _case("ptx/attention-bwd")
    assert delta.load_bytes == 2 * 2 * case["b"] * case["h"] * case["s"] * case["d"]  # O and dO, once


def test_a_token_wgmma_beside_an_ffma_product_is_not_the_work():
    task = get_task("ptx/gemm-bf16")
    flops = task.flops(_case(task.id))
    decoy = KernelProfile("decoy", [_row("HGMMA.64x256x16.F32.BF16", 128), _row("UTMALDG.2D", 32)])
    naive = KernelProfile("naive", [_row("FFMA", flops // 2), _row("LDG.E.U16", 2 * flops // 2)])
    missing, _, _ = _judge_work(task.id, [decoy, naive])
    assert "did 0.2% of the task's" in missing["wgmma"], missing
    assert "ordinary global loads" in missing["tma"] and "not TMA" in missing["tma"]


def test_a_full_size_wgmma_on_scratch_beside_an_ffma_product_is_caught_by_the_other_arithmetic():
    task = get_task("ptx/gemm-bf16")
    flops = task.flops(_case(task.id))
    scratch = _report("gemm-bf16")  # the real kernel, run on data the answer never uses
    naive = KernelProfile("naive", [_row("FFMA", flops // 2)])
    missing, _, _ = _judge_work(task.id, [*scratch, naive])
    assert "wgmma" in missing and "other floating-point arithmetic" in missing["wgmma"], missing
    assert "did 100.0% of the task's" in missing["wgmma"]
    half = KernelProfile("half", [_row("HMMA.16816.F32.BF16", int(flops * 0.3 / 128))])  # 30% on mma.sync
    missing, _, _ = _judge_work(task.id, [*scratch, half])
    assert "other tensor-core" in missing["wgmma"]


def test_a_full_size_wgmma_on_scratch_beside_an_integer_emulated_product_is_caught_by_its_instructions():
    """No floating-point instruction computes this product: each multiply-add is done on the operands'
    bits (IMAD on the mantissas, IADD3 on the exponents, SHF and LOP3 to align and pack), four
    instructions at the least. Only the count of every other instruction sees it."""
    task = get_task("ptx/gemm-bf16")
    flops = task.flops(_case(task.id))
    macs = flops // 2
    emulated = KernelProfile("emulated", [_row("IMAD", macs), _row("IADD3", macs), _row("SHF.R.U32", macs),
                                          _row("LOP3.LUT", macs)])
    missing, _, work = _judge_work(task.id, [*_report("gemm-bf16"), emulated])
    assert work.other_flops == 0 and "wgmma" in missing, missing
    assert "instructions other than tensor-core ones" in missing["wgmma"]
    assert "ran 2.0" in missing["wgmma"], missing


@pytest.mark.skipif(loader.nvrtc_version() is None or loader.ptxas_path() is None,
                    reason="NVRTC or ptxas not available")
def test_the_integer_decoy_of_the_gpu_tests_computes_its_product_without_floating_point_arithmetic():
    """tests/data/int_gemm.cu is the kernel the GPU test runs beside a full-size wgmma: for that test to reach
    the instruction count, its SASS may hold one FMUL (the final scale) and no other floating-point opcode."""
    source = (Path(__file__).parent / "data" / "int_gemm.cu").read_text()
    ptx, log, _ = compile_cuda(source, "int_gemm", "sm_90a", ["-arch=sm_90a"], [])
    record = assemble(ptx, name="int_gemm", target="sm_90a", language="cuda", flags=[], nvrtc_log=log,
                      options=[])
    [opcodes] = sass_opcodes(disassemble(record.cubin)).values()
    floating = [op for op in opcodes if op.split(".")[0] in ARITHMETIC_FLOPS]
    assert floating == ["FMUL"], floating
    assert any(op.startswith("IMAD") for op in opcodes) and any(op.startswith("SHF") for op in opcodes)


def test_heavy_address_arithmetic_of_an_honest_kernel_passes():
    """Small tiles and index math recomputed every step: a tenth of an instruction per flop, four times
    what the references run, is still far under the bound."""
    task = get_task("ptx/gemm-bf16")
    flops = task.flops(_case(task.id))
    index_math = KernelProfile("index", [_row("IMAD.WIDE", flops // 20), _row("ISETP.GE.AND", flops // 20)])
    missing, unmeasured, _ = _judge_work(task.id, [*_report("gemm-bf16"), index_math])
    assert missing == {} and unmeasured == []


@pytest.mark.parametrize("name", list(REFERENCES))
def test_the_references_run_few_instructions_beside_their_tensor_cores(name):
    """Measured on the H200: 0.009 (GEMMs) to 0.023 (attention's softmax) other instructions per flop."""
    task_id = REFERENCES[name]
    work = executed_work(k.rows for k in _report(name))
    per_flop = work.other_instructions / get_task(task_id).flops(_case(task_id))
    assert 0.005 < per_flop < 0.03


def test_plain_loads_of_every_operand_fail_tma_even_when_a_tma_load_ran():
    task = get_task("ptx/gemm-bf16")
    nbytes = task.bytes(_case(task.id))
    loads = KernelProfile("loads", [_row("LDG.E.128", nbytes // 16 + 32)])
    missing, _, _ = _judge_work(task.id, [*_report("gemm-bf16"), loads])
    assert set(missing) == {"tma"} and "1.00x the task's" in missing["tma"]


def test_honest_kernels_in_other_styles_pass():
    """A task requiring any tensor core ("mma") takes mma.sync; an epilogue of packed halves and the side
    loads of scales stay far under the bounds."""
    task = get_task("ptx/gemm-bf16")
    flops, nbytes = task.flops(_case(task.id)), task.bytes(_case(task.id))
    rows = [_row("HMMA.16816.F32.BF16", flops // 128), _row("HFMA2", flops // 100), _row("LDG.E.64", 1024)]
    work = executed_work([rows])
    assert shortfalls(["mma"], FEATURES, work, flops, nbytes) == ({}, [])
    assert "wgmma" in shortfalls(["wgmma"], FEATURES, work, flops, nbytes)[0]


@pytest.mark.parametrize(("opcode", "family", "flops"), [
    ("HGMMA.64x256x16.F32.BF16", "wgmma", 2 * 64 * 256 * 16 / 128),
    ("QGMMA.64x128x32.F32.E4M3.E4M3", "wgmma", 2 * 64 * 128 * 32 / 128),
    ("HMMA.16816.F32.BF16", "mma.sync", 2 * 16 * 8 * 16 / 32),
    ("HMMA.1688.F32", "mma.sync", 2 * 16 * 8 * 8 / 32),
    ("IMMA.16832.S8.S8", "mma.sync", 2 * 16 * 8 * 32 / 32),
    ("DMMA.884", "mma.sync", 2 * 8 * 8 * 4 / 32),
])
def test_tensor_core_tiles_are_read_from_the_opcode(opcode, family, flops):
    assert tensor_flops(opcode) == (family, flops)


def test_load_widths_and_rows_that_did_nothing():
    assert [load_width(op) for op in ("LDG.E", "LDG.E.128.CONSTANT", "LDG.E.U16", "LDGSTS.E.BYPASS.128",
                                      "LD.E.64", "LDG.E.S8")] == [4, 16, 2, 16, 8, 1]
    idle = SassRow("0x0", "@P0 FFMA R0, R1, R2, R3", "FFMA", 512, 0)
    assert executed_work([[idle]]).other_flops == 0


def test_tcgen05_work_is_not_read_from_its_opcodes_and_says_so():
    work = executed_work([[_row("UTCHMMA", 128)]])
    missing, unmeasured = shortfalls(["tcgen05"], FEATURES, work, 1e9, 1e6)
    assert missing == {} and "descriptor" in unmeasured[0]


# ------------------------------------------------------------------------- through the instruction stage
def _kernel_report(name: str) -> KernelReport:
    families = {f: {"ptx": 0, "sass": 0} for f in FAMILIES}
    families["wgmma"] = {"ptx": 4, "sass": 4}
    families["tma"] = {"ptx": 2, "sass": 2}
    return KernelReport(name=name, target="sm_90a", families=families)


def _stage(monkeypatch, kernels: list[KernelProfile], answer: str | None = "right", launches: int = 1,
           checked: list[str] | None = None):
    """The instruction stage as on a GPU, with Nsight Compute's answer given and the profiled call's reply
    made here: the reference's own outputs (``right``), zeros (``wrong``), or none (the call raised).
    ``checked``: the kernels the device trace saw in the checked calls of the profiled case."""
    task = get_task("ptx/gemm-bf16")
    evaluation = Evaluator("cpu").evaluation(task, "", EvalOptions())
    reply = None
    if answer is not None:
        check = Check("dev", _case(task.id), task.seeds[0], task.distributions[0])
        expected, _ = evaluation.reference(check)
        out = expected[0].to(torch.bfloat16)  # the reference is float64; the answer is the task's bf16
        reply = RunReply(ok=True, outputs=[out if answer == "right" else torch.zeros_like(out)],
                         loader_launches=launches)
    run = DriverRun(log="", command=[], seconds=0.0, returned=answer is not None,
                    error="" if answer is not None else "boom", reply=reply)
    monkeypatch.setattr(profile, "profile_candidate", lambda *a, **k: profile.Profile(kernels, run=run))
    evaluation.device = "cuda"  # pretend: only the profile call would touch the GPU, and it is replaced
    evaluation.result = EvalResult(task=task.id, target="sm_90a", device="H200")
    names = {k.name for k in kernels} | set(checked or ())
    evaluation.result.kernels = [_kernel_report(k) for k in sorted(names)]
    if checked is not None:
        activities = [{"kind": "kernel", "name": n} for n in [*checked, "at::native::fill_kernel"]]
        evaluation.device_traces = [(case_label(_case(task.id)), {"activities": activities}),
                                    (case_label(task.cases("dev")[0]), {"activities": [{"kind": "kernel",
                                                                                         "name": "other"}]})]
    inspection.instructions(evaluation)
    return evaluation.result


def test_the_stage_records_the_work_and_passes_an_honest_profile(monkeypatch):
    result = _stage(monkeypatch, _report("gemm-bf16"))
    assert result.arch_verified and not result.violations, (result.missing_features, result.violations)
    work = result.executed_work
    assert work["tensor_flops"]["wgmma"] == pytest.approx(4 / 3 * work["task_flops"])


def _stage_without_profile(monkeypatch, error: Exception) -> EvalResult:
    """The instruction stage as on a GPU, with the compiled code holding every required instruction and
    Nsight Compute answering with ``error``."""
    task = get_task("ptx/gemm-bf16")
    evaluation = Evaluator("cpu").evaluation(task, "", EvalOptions())

    def fails(*args, **kwargs):
        raise error

    monkeypatch.setattr(profile, "profile_candidate", fails)
    evaluation.device = "cuda"
    evaluation.result = EvalResult(task=task.id, target="sm_90a", device="H200")
    evaluation.result.kernels = [_kernel_report("gemm")]
    inspection.instructions(evaluation)
    return evaluation.result


def test_a_profiled_call_that_cannot_report_leaves_the_features_unshown(monkeypatch):
    """A candidate can make its run under Nsight Compute fail or hang (it may see the tool's variables):
    instructions merely compiled in (a dead branch) must not then pass for executed ones."""
    result = _stage_without_profile(monkeypatch, profile.ProfileError("ncu ran past 60 s; it was killed"))
    assert result.required_features_met is False and not result.arch_verified
    assert "could not show what the profiled call executed" in result.missing_features["wgmma"]
    assert any("ran past" in s for s in result.skipped_checks), result.skipped_checks


def test_a_machine_without_the_profiler_checks_the_compiled_code_only(monkeypatch):
    result = _stage_without_profile(monkeypatch, profile.ToolMissing("Nsight Compute (ncu) is not installed"))
    assert result.required_features_met is True and not result.missing_features
    assert any("compiled code only" in s for s in result.skipped_checks), result.skipped_checks


def test_launches_the_profiler_did_not_see_leave_the_features_unshown(monkeypatch):
    result = _stage(monkeypatch, _report("gemm-bf16"), launches=17)
    assert result.arch_verified is False
    assert all("launched 17 kernels and Nsight Compute profiled 1" in why
               for why in result.missing_features.values()), result.missing_features


def test_a_call_that_did_not_return_under_the_profiler_shows_nothing(monkeypatch):
    result = _stage(monkeypatch, _report("gemm-bf16"), None)
    assert result.arch_verified is False
    assert "did not return normally (boom)" in result.missing_features["wgmma"]


def test_a_wrong_answer_under_the_profiler_fails_the_verdict(monkeypatch):
    result = _stage(monkeypatch, _report("gemm-bf16"), "wrong")
    assert result.correct is False
    said = [v.message for v in result.violations if v.code == "profiled-call-wrong"]
    assert said and "case {'m': 512" in said[0], result.violations


def test_a_profile_of_other_kernels_than_the_checked_calls_ran_shows_nothing(monkeypatch):
    """Under the profiler the wgmma kernel, in the checked calls another one: the profile is of other code."""
    result = _stage(monkeypatch, _report("gemm-bf16"), checked=["naive_gemm"])
    assert result.arch_verified is False
    assert "the checked calls of the same case ['naive_gemm']" in result.missing_features["wgmma"]
    both = _stage(monkeypatch, _report("gemm-bf16"), checked=["gemm_bf16", "naive_gemm"])
    assert both.arch_verified is False and "['gemm_bf16', 'naive_gemm']" in both.missing_features["tma"]
    same = _stage(monkeypatch, _report("gemm-bf16"), checked=["gemm_bf16"])
    assert same.arch_verified, same.missing_features
