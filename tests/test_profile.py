"""Executed-instruction counts from Nsight Compute output, parsed on a CPU; dead code fails a feature.

The samples are written by hand in the layout ``ncu --page source --csv --print-source sass``
prints (as Nsight Compute 2025 printed it on the H200): one CSV row per SASS instruction with its
address, its text, the warp-level executed count and the predicated-on thread count.
"""
# ruff: noqa: E501  (embedded CUDA sources and tool output keep their own line lengths)

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from warpgym.env import EvalOptions, Evaluator
from warpgym.env.judge import profile, sandbox
from warpgym.env.judge.result import EvalResult, KernelReport
from warpgym.env.toolchain.families import FAMILIES
from warpgym.tasks import get_task

NCU_TWO_KERNELS = '''==PROF== Connected to process 4242 (/usr/bin/python3.12)
==PROF== Profiling "gemm_bf16" - 0: 0%....50%....100% - 4 passes
==PROF== Profiling "attn_bwd_delta" - 1: 0%....50%....100% - 4 passes
==PROF== Disconnected from process 4242
[4242] python3.12@127.0.0.1
  gemm_bf16 (32, 1, 1)x(256, 1, 1), Context 1, Stream 7, Device 0, CC 9.0
"Address","Source","inst_executed","thread_inst_executed_true"
"0x7f3a10000000","LDC R1, c[0x0][0x28]","256","8192"
"0x7f3a10000010","@!UP0 SYNCS.EXCH.64 URZ, [UR8], UR4","32","32"
"0x7f3a10000020","@P0 UTMALDG.2D [UR16], [UR6], desc[UR12]","2,048","2,048"
"0x7f3a10000030","SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR8+0x8], R3","4096","131072"
"0x7f3a10000040","WARPGROUP.ARRIVE","1024","32768"
"0x7f3a10000050","HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], R24, gsb0","8192","262144"
"0x7f3a10000060","@P2 HGMMA.64x256x16.F32.BF16 R24, gdesc[UR20], R24, gsb0","512","0"
"0x7f3a10000070","UTMASTG.2D [UR4], [UR10]","64","64"
"0x7f3a10000080","EXIT","256","8192"
  attn_bwd_delta (64, 1, 1)x(128, 1, 1), Context 1, Stream 7, Device 0, CC 9.0
"Address","Source","inst_executed","thread_inst_executed_true"
"0x7f3a10100000","LDG.E.128 R4, desc[UR4][R2.64]","512","16384"
"0x7f3a10100010","FFMA R0, R4, R8, R0","512","16384"
"0x7f3a10100020","STG.E desc[UR4][R6.64], R0","128","4096"
'''

# The display-name layout, one launch, a kernel-name row instead of ==PROF== lines.
NCU_DISPLAY_NAMES = '''"Kernel Name","dead_wgmma"
"# Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed","Predicated-On Thread Instructions Executed"
"0x100","MOV R1, c[0x0][0x28]","0","128","4096"
"0x110","ISETP.GE.AND P0, PT, R0, RZ, PT","0","128","4096"
"0x120","@P0 BRA 0x200","0","128","4096"
"0x130","WARPGROUP.ARRIVE","0","0","0"
"0x140","HGMMA.64x8x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT","0","0","0"
"0x150","UTMALDG.2D [UR8], [UR4]","0","4","4"
"0x200","EXIT","0","128","4096"
'''


def test_two_kernels_and_their_family_counts():
    kernels = profile.parse_ncu_source_csv(NCU_TWO_KERNELS)
    assert [k.name for k in kernels] == ["gemm_bf16", "attn_bwd_delta"]
    gemm, delta = kernels
    assert len(gemm.rows) == 9 and gemm.rows[2].opcode == "UTMALDG.2D" and gemm.rows[2].executed == 2048
    fam = gemm.families()
    # The second HGMMA ran 512 times with every thread's predicate off: it did nothing.
    assert fam["wgmma"] == 8192
    assert fam["tma"] == 2048 and fam["tma-store"] == 64  # loads into shared memory; the store apart
    assert fam["mbarrier"] == 32 + 4096
    assert fam["tcgen05"] == 0
    assert delta.families()["wgmma"] == 0 and sum(delta.families().values()) == 0
    totals = profile.Profile(kernels).families()
    assert totals["wgmma"] == 8192 and set(totals) == set(FAMILIES)


def test_display_name_layout_and_dead_code():
    (kernel,) = profile.parse_ncu_source_csv(NCU_DISPLAY_NAMES)
    assert kernel.name == "dead_wgmma"
    fam = kernel.families()
    assert fam["wgmma"] == 0, "compiled in, never executed"
    assert fam["tma"] == 4


def test_unnamed_launches_get_numbered_and_empty_output_is_empty():
    text = '"Address","Source","inst_executed"\n"0x0","QGMMA.64x128x32.F32.E4M3.E4M3 R0, gdesc[UR4], R0","7"\n'
    (kernel,) = profile.parse_ncu_source_csv(text)
    assert kernel.name == "kernel_0" and kernel.families()["wgmma"] == 7
    assert profile.parse_ncu_source_csv("==PROF== No kernels were profiled.\n") == []


@pytest.mark.parametrize("line,opcode", [
    ("@!P0 HGMMA.64x128x16.F32 R24, gdesc[UR4], R24", "HGMMA.64x128x16.F32"),
    ("{ @UP1 UTMALDG.2D [UR8], [UR4] ;", "UTMALDG.2D"),
    ("  ELECT P0, URZ, PT ", "ELECT"),
    ("@PT FENCE.VIEW.ASYNC.S", "FENCE.VIEW.ASYNC.S"),
])
def test_sass_opcode(line, opcode):
    assert profile.sass_opcode(line) == opcode


def test_kernel_filter_is_anchored_and_escaped():
    flt = profile.kernel_filter(["gemm", "_Z4axpyPfS_f", "gemm"])
    assert flt == "regex:^(_Z4axpyPfS_f|gemm)$"
    assert re.match(flt.removeprefix("regex:"), "gemm") and not re.match(flt.removeprefix("regex:"), "gemm_splitk")
    assert profile.kernel_filter([]) is None


def test_memcheck_report():
    text = """========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at oob+0x70 in oob.cu:1
=========     by thread (63,0,0) in block (0,0,0)
=========     Address 0x7f00000fc00 is out of bounds
=========     Host Frame: [0x2ef045] in libcuda.so.1
=========
========= ERROR SUMMARY: 64 errors
"""
    report = profile.parse_memcheck(text)
    assert not report.ok and report.errors == 64
    assert "Invalid __global__ write" in report.text and "libcuda" not in report.text
    clean = profile.parse_memcheck("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n")
    assert clean.ok and clean.errors == 0
    assert profile.parse_memcheck("it crashed").errors == -1


def _kernel(name: str, wgmma_sass: int) -> KernelReport:
    families = {f: {"ptx": 0, "sass": 0} for f in FAMILIES}
    families["wgmma"] = {"ptx": 4, "sass": wgmma_sass}
    families["tma"] = {"ptx": 2, "sass": 2}
    return KernelReport(name=name, target="sm_90a", families=families)


def _judge(monkeypatch, kernels: list[profile.KernelProfile]) -> EvalResult:
    """The instruction stage as on a GPU, with Nsight Compute's answer given."""
    task = get_task("ptx/gemm-bf16")
    evaluator = Evaluator("cpu")
    seen = {}

    def fake_profile(task_id, source, case, **kwargs):
        seen.update(task=task_id, case=case, kernels=sorted(kwargs["kernels"]))
        return profile.Profile(kernels)

    monkeypatch.setattr(profile, "profile_candidate", fake_profile)
    result = EvalResult(task=task.id, target="sm_90a", device="H200")
    result.kernels = [_kernel("gemm", 4)]
    from warpgym.env.judge import inspection

    evaluation = evaluator.evaluation(task, "", EvalOptions())
    evaluation.device = "cuda"  # pretend: only the profile call would touch the GPU, and it is replaced
    evaluation.result = result
    inspection.instructions(evaluation)
    assert seen["task"] == task.id and seen["kernels"] == ["gemm"]
    return result


def test_required_feature_executed_passes(monkeypatch):
    result = _judge(monkeypatch, profile.parse_ncu_source_csv(NCU_TWO_KERNELS))
    assert result.required_features_met and result.arch_verified
    assert result.instructions["wgmma"]["executed"] == 8192 and result.instructions["tma"]["executed"] == 2048


def test_required_feature_in_dead_code_fails_and_says_so(monkeypatch):
    result = _judge(monkeypatch, profile.parse_ncu_source_csv(NCU_DISPLAY_NAMES))
    assert result.required_features_met is False and result.arch_verified is False
    assert "dead code" in result.missing_features["wgmma"] and "sass 4" in result.missing_features["wgmma"]
    assert "tma" not in result.missing_features


FAKE_PROFILER = str(Path(__file__).parent / "tools" / "fake_profiler.py")
"""Stands in for ncu: writes a one-kernel report to its ``--log-file`` and execs the worker's command."""

HOST_COMPUTE = """
import socket

import torch
import triton
import triton.language as tl

from warpgym import loader

print("IMPORTED", loader.default_target())


@triton.jit
def unused_kernel(ptr):
    tl.store(ptr, tl.load(ptr))


def add(x, y):
    try:
        socket.socket()
    except OSError:
        pass
    return x + y
"""


@pytest.fixture(scope="module")
def host_compute_run():
    case = get_task("math/add").shapes["dev"][0]
    return profile._run_driver([FAKE_PROFILER], "math/add", HOST_COMPUTE, case, 0, "normal", "sm_100a", 300,
                               device="cpu")


def test_the_profiled_run_is_a_confined_worker_behind_the_tool(host_compute_run):
    """The tool runs the worker's own confined command, and its report comes from the tool's log file."""
    run = host_compute_run
    assert run.command[0] == FAKE_PROFILER and run.command[1] == "--log-file"
    assert run.command[3:5] == [sys.executable, sandbox.CONFINE_SCRIPT], run.command
    assert [k.name for k in profile.parse_ncu_source_csv(run.log)] == ["fake_kernel"]
    assert run.sandbox is not None and "audit" in run.sandbox["applied"], run.sandbox
    for layer in ("network", "hidden"):  # what this machine allows, as for every worker
        if layer in run.sandbox["applied"]:
            continue
        pytest.skip(f"{layer} not applied here: {run.sandbox['not_applied'].get(layer)}")
    assert any(p.endswith("/tasks") for p in run.sandbox["applied"]["hidden"].split(" (")[0].split(", "))


def test_host_compute_under_the_profiler_is_flagged(host_compute_run):
    run = host_compute_run
    assert run.returned, run.error
    assert any("add" in op for op in run.forbidden_ops), run.forbidden_ops
    assert any(code == "sandbox-network" for code, _ in run.incidents), run.incidents
    assert run.findings()


HANGS = """
import time


def add(x, y):
    time.sleep(3600)
    return x + y
"""


def test_a_profiled_run_past_its_time_is_killed_and_says_what_the_tool_printed(monkeypatch):
    """Where a profiled run stalls is in the tool's log (its passes, the kernel it was in): the error keeps it."""
    monkeypatch.setattr(profile, "ncu_path", lambda: FAKE_PROFILER)
    task = get_task("math/add")
    with pytest.raises(profile.ProfileError) as caught:
        profile.profile_candidate(task.id, HANGS, task.shapes["dev"][0], device="cpu", timeout=15)
    assert "ran past 15 s" in str(caught.value)
    assert 'Profiling "fake_kernel"' in str(caught.value), caught.value


def test_profile_candidate_end_to_end_with_a_stand_in_for_ncu(monkeypatch):
    """The whole ncu path with the stand-in: an honest solution returns, is not flagged, and its report is
    read; the host-compute candidate fails the instruction stage's check with the policy's reason."""
    from warpgym.env.judge import findings

    monkeypatch.setattr(profile, "ncu_path", lambda: FAKE_PROFILER)
    task = get_task("math/add")
    case = task.shapes["dev"][0]
    honest = profile.profile_candidate(task.id, task.solution_source(), case, device="cpu", timeout=300)
    assert honest.run is not None and honest.run.returned and not honest.run.findings(), honest.run
    assert honest.families()["wgmma"] == 8
    flagged = profile.profile_candidate(task.id, HOST_COMPUTE, case, device="cpu", timeout=300)
    evaluation = Evaluator("cpu").evaluation(task, "", EvalOptions())
    assert findings.profiled_findings(evaluation, flagged.run) is False
    assert evaluation.result.correct is False
    said = [v.message for v in evaluation.result.violations if v.code == "torch-op"]
    assert said and "under the profiler" in said[0], evaluation.result.violations


def test_profile_candidate_counts_a_reprinted_launch_once(monkeypatch, tmp_path):
    """Through the whole ncu path: the stand-in prints the call's one launch twice; the Profile the judge
    gets holds it once, with the count of what it dropped."""
    tool = tmp_path / "reprinting_profiler"  # the worker's environment is its own: the switch rides here
    tool.write_text(f'#!/bin/sh\nFAKE_PROFILER_REPRINT=1 exec {sys.executable} {FAKE_PROFILER} "$@"\n')
    tool.chmod(0o755)
    monkeypatch.setattr(profile, "ncu_path", lambda: str(tool))
    task = get_task("math/add")
    prof = profile.profile_candidate(task.id, task.solution_source(), task.shapes["dev"][0], device="cpu",
                                     timeout=300)
    assert prof.run is not None and prof.run.launches == 1, prof.run
    [name] = prof.run.launch_names  # the worker's name for the launch: the @triton.jit function's
    assert f"def {name}(" in task.solution_source(), name
    assert prof.reprinted == 1 and [k.name for k in prof.kernels] == ["fake_kernel"]
    assert prof.families()["wgmma"] == 8


def test_memcheck_runs_without_the_network_layer_and_says_why(monkeypatch):
    """compute-sanitizer reaches its target over loopback TCP on a port it picks (memcheck never finished in
    the worker's network namespace on the H200): that worker has none, and its report says so."""
    monkeypatch.setattr(profile, "sanitizer_path", lambda: FAKE_PROFILER)
    task = get_task("math/add")
    report = profile.memcheck_candidate(task.id, task.solution_source(), task.shapes["dev"][0], device="cpu",
                                        timeout=300)
    assert report.ok and report.run is not None and report.run.returned, report.run
    sandbox = report.run.sandbox
    if sandbox is None:
        pytest.skip("the sandbox is turned off here")
    assert sandbox["not_applied"].get("network") == profile.SANITIZER_NETWORK, sandbox
    assert "network" not in sandbox["applied"] and "audit" in sandbox["applied"]


def _blocks(*blocks: tuple[str, list[tuple[str, str, int, int]]]) -> str:
    """Source-page output in the layout ncu printed on an H100 (a ``Kernel Name`` row before each launch)."""
    out = ["==PROF== Connected to process 1487 (/usr/bin/python3.12)",
           "==PROF== Disconnected from process 1487"]
    for name, rows in blocks:
        out += [f'"Kernel Name","{name}",', '"Address","Source","inst_executed","thread_inst_executed_true"']
        out += [f'"{a}","      {src}","{n}","{t}"' for a, src, n, t in rows]
    return "\n".join(out) + "\n"


PREPROCESS = [("0x7fd5337b2a00", "LDG.E.128 R4, desc[UR4][R2.64]", 1152, 36864),
              ("0x7fd5337b2a10", "EXIT", 1152, 36864)]
BACKWARD = [("0x7fd5337b4b30", "HGMMA.64x64x16.F32.BF16 R184, gdesc[UR20], RZ, !UPT", 432, 13824),
            ("0x7fd5337b4c50", "UTMALDG.2D [UR8], [UR4]", 18, 18),
            ("0x7fd5337b4d20", "EXIT", 3456, 110592)]
CONVERT = [("0x7fd5337b3000", "FMUL R3, R2, R5", 144, 4608), ("0x7fd5337b3010", "EXIT", 144, 4608)]


def test_a_launch_printed_twice_counts_once():
    """The H100's output for one call of a three-kernel module: each launch twice in a row, identical.
    With the call's three launches known, each counts once, so the work is one call's."""
    from warpgym.env.judge.work import executed_work

    text = _blocks(("pre", PREPROCESS), ("pre", PREPROCESS), ("bwd", BACKWARD), ("bwd", BACKWARD),
                   ("conv", CONVERT), ("conv", CONVERT))
    kernels = profile.parse_ncu_source_csv(text)
    assert [k.name for k in kernels] == ["pre", "pre", "bwd", "bwd", "conv", "conv"]
    doubled = executed_work(k.rows for k in kernels)
    kept, dropped = profile.collapse_reprints(kernels, 3)
    assert dropped == 3 and [k.name for k in kept] == ["pre", "bwd", "conv"]
    once = executed_work(k.rows for k in kept)
    assert once.tensor_flops["wgmma"] == doubled.tensor_flops["wgmma"] / 2 == 2 * 64 * 64 * 16 / 128 * 13824
    assert once.load_bytes == doubled.load_bytes / 2 == 16 * 36864
    assert profile.Profile(kept).families()["wgmma"] == 432


def test_real_repeated_launches_stay_and_only_exact_repeats_go():
    """Two launches of one kernel that the call made are two blocks; no count, unknown or not, drops a block
    that differs from the one before it; no more blocks go than the surplus over the call's launches."""
    same = profile.parse_ncu_source_csv(_blocks(("bwd", BACKWARD), ("bwd", BACKWARD), ("bwd", BACKWARD)))
    assert profile.collapse_reprints(same, 3) == (same, 0)
    assert profile.collapse_reprints(same, None) == (same, 0)
    kept, dropped = profile.collapse_reprints(same, 2)
    assert dropped == 1 and len(kept) == 2
    other = [(a, s, n * 2, t * 2) for a, s, n, t in BACKWARD]
    differ = profile.parse_ncu_source_csv(_blocks(("bwd", BACKWARD), ("bwd", other)))
    assert profile.collapse_reprints(differ, 1) == (differ, 0)
    apart = profile.parse_ncu_source_csv(_blocks(("bwd", BACKWARD), ("pre", PREPROCESS), ("bwd", BACKWARD)))
    assert profile.collapse_reprints(apart, 2) == (apart, 0)


def test_with_the_launches_names_the_reprint_goes_not_the_real_launch_before_it():
    """Three launches A, A, B, with B printed twice: by position alone the first exact repeat (the real second
    A) would go and B would count twice; matched to the launches' names, the reprinted B goes."""
    other = [(a, s, n * 2, t * 2) for a, s, n, t in CONVERT]
    blocks = profile.parse_ncu_source_csv(_blocks(("conv", CONVERT), ("conv", CONVERT), ("bwd", BACKWARD),
                                                  ("bwd", BACKWARD)))
    by_position, _ = profile.collapse_reprints(blocks, 3)
    assert [k.name for k in by_position] == ["conv", "bwd", "bwd"]
    kept, dropped = profile.collapse_reprints(blocks, 3, ["conv", "conv", "bwd"])
    assert dropped == 1 and [k.name for k in kept] == ["conv", "conv", "bwd"]
    # Mangled and demangled forms of one name match; two real launches of one kernel that differ both stay.
    mixed = profile.parse_ncu_source_csv(_blocks(("void ns::bwd<int>(float*)", BACKWARD),
                                                 ("void ns::bwd<int>(float*)", BACKWARD), ("conv", other),
                                                 ("conv", CONVERT)))
    kept, dropped = profile.collapse_reprints(mixed, 3, ["_ZN2ns3bwdIiEEvPf", "conv", "conv"])
    assert dropped == 1 and [k.name for k in kept] == ["void ns::bwd<int>(float*)", "conv", "conv"]


def test_the_launch_order_keeps_the_last_names_and_says_when_a_call_made_more():
    from warpgym.env.toolchain.registry import LaunchOrder

    order = LaunchOrder(keep=3)
    start = order.total
    for name in "abcd":
        order.add(name)
    assert order.since(start) is None  # four launches, three names kept
    assert order.since(start + 1) == ["b", "c", "d"]
    order.add("e")
    assert order.since(order.total - 1) == ["e"] and order.since(order.total) == []


def test_launches_the_worker_does_not_count_are_not_named():
    """The names must line up with the count: a launch inside ``unrecorded`` (the harness's own, the timing
    loop's) is neither counted nor named."""
    from warpgym.env.toolchain.registry import ORDER
    from warpgym.env.worker.triton_launches import LaunchRecorder

    def candidate_kernel(x):
        return x

    recorder, start = LaunchRecorder(), ORDER.total
    with recorder.unrecorded():
        recorder.record(candidate_kernel, (1,), {})
    recorder.record(candidate_kernel, (1,), {})
    assert recorder.count == 1 and ORDER.since(start) == ["candidate_kernel"]


def test_names_that_cannot_be_matched_fall_back_to_position():
    """A block named by no launch, or a list of the wrong length, is no reading of the blocks: the rule by
    position applies, as without names."""
    blocks = profile.parse_ncu_source_csv(_blocks(("pre", PREPROCESS), ("pre", PREPROCESS), ("bwd", BACKWARD)))
    for names in (["pre", "other"], ["pre"], ["pre", "bwd", "bwd"]):
        assert profile.collapse_reprints(blocks, 2, names) == profile.collapse_reprints(blocks, 2)
    kept, _ = profile.collapse_reprints(blocks, 2, ["pre", "other"])
    assert [k.name for k in kept] == ["pre", "bwd"]
