"""What meets a required instruction feature: instructions that reach the SASS and do the feature's work.

A PTX comment is not code; an instruction in the PTX that ptxas drops never reaches the GPU; wgmma's fences,
commits and waits multiply nothing (ptxas even emits a GMMA writing RZ for them alone); a TMA prefetch into L2
or a store is no copy of the operands into shared memory. On a CPU the required features are checked in the
compiled code only, and the arch-verified mark, which needs the instructions seen at work on a GPU, is left
undecided with the reason in the feedback.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from warpgym.env import EvalOptions, Evaluator
from warpgym.env.judge import feedback, inspection, kernels, profile, tensor_core_timing
from warpgym.env.judge.instructions import FAMILIES
from warpgym.env.judge.profile import KernelProfile, SassRow
from warpgym.env.judge.result import EvalResult, KernelReport
from warpgym.env.protocol.messages import LoaderKernel, LoaderModule
from warpgym.env.toolchain import loader
from warpgym.env.toolchain.families import count_ptx, count_sass_opcodes, ptx_mnemonics, sass_placeholder
from warpgym.tasks import get_task

GEMM = get_task("ptx/gemm-bf16")
needs_ptxas = pytest.mark.skipif(loader.ptxas_path() is None, reason="ptxas not available")

MMA = "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {d0, d1}, da, db, 1, 1, 1, 0, 0;"
LOAD = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [s], [t, {x, y}], [bar];"


# ------------------------------------------------------------------------------------------ counting the PTX
def test_a_block_comment_a_string_or_a_line_comment_holds_no_instruction():
    ptx = f"""
.version 8.0
.file 1 "a.cu; {MMA}"
/*
{MMA}
{LOAD}
*/ mov.u32 r1, 0; /* {MMA} */ add.s32 r2, r1, 1; // {LOAD}
/* "*/ mul.lo.s32 r3, r2, 2;
// /* a line comment opens no block
sub.s32 r4, r3, 1;
"""
    assert ptx_mnemonics(ptx) == ["mov.u32", "add.s32", "mul.lo.s32", "sub.s32"]
    assert count_ptx(ptx)["wgmma"] == 0 and count_ptx(ptx)["tma"] == 0


def test_every_statement_counts_inside_braces_and_several_on_a_line():
    """Inline asm as NVRTC writes it: a block in braces on one line, labels and predicates before mnemonics,
    an instruction written over several lines (its operand lines are no instructions), ``.loc`` between."""
    ptx = """
\t{ .reg .pred P1; elect.sync %r3|P1, 0xffffffff; }
$L__BB0_1: @%p1 bra $L__BB0_2;
\t.loc 1 2 3
\twgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16
\t {%f1, %f2,
\t  %f3}, %rd1, %rd2, p, 1, 1, 0, 0;
"""
    assert ptx_mnemonics(ptx) == ["elect.sync", "bra", "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16"]


def test_the_required_families_hold_the_work_and_the_rest_is_reported_beside_them():
    ptx = "\n".join([
        "wgmma.fence.sync.aligned;", "wgmma.commit_group.sync.aligned;", "wgmma.wait_group.sync.aligned 0;",
        MMA, LOAD,
        "cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [s], [t, {x, y}], [b];",
        "cp.async.bulk.prefetch.tensor.1d.L2.global [t, {x}];",
        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [t, {x, y}], [s];",
        "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [t, {x, y}], [s];",
        "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [a], 32;",
        "tcgen05.ld.sync.aligned.32x32b.x1.b32 {r}, [t];",
        "tcgen05.mma.cta_group::1.kind::f16 [t], da, db, idesc, p;",
    ])
    counts = count_ptx(ptx)
    assert (counts["wgmma"], counts["wgmma-sync"]) == (1, 3)
    assert (counts["tma"], counts["tma-store"], counts["tma-prefetch"]) == (2, 2, 1)
    assert (counts["tcgen05"], counts["tcgen05-tmem"]) == (1, 2)
    sass = count_sass_opcodes(["WARPGROUP.ARRIVE", "HGMMA.64x256x16.F32.BF16", "WARPGROUP.DEPBAR.LE",
                               "UTMAPF.L2.1D", "UTMALDG.2D", "UTMASTG.2D", "UTMAREDG.2D", "UTCHMMA", "UTCBAR",
                               "LDTM.x16"])
    assert (sass["wgmma"], sass["wgmma-sync"]) == (1, 2)
    assert (sass["tma"], sass["tma-store"], sass["tma-prefetch"]) == (1, 2, 1)
    assert (sass["tcgen05"], sass["tcgen05-tmem"]) == (1, 2)
    assert FAMILIES["wgmma"].placeholder and not FAMILIES["tma"].placeholder


def test_ptxas_s_placeholder_gmma_is_told_from_a_real_one():
    assert sass_placeholder("HGMMA.64x8x16.F16 RZ, gdesc[URZ], RZ, !UPT, gsb0 ;")
    assert sass_placeholder("@P0 HGMMA.64x8x16.F16 RZ, gdesc[URZ], RZ, !UPT, gsb0")
    # Real ones, from the references' Nsight Compute reports: a first product starts from RZ, never writes it.
    assert not sass_placeholder("HGMMA.64x64x16.F32.BF16 R156, gdesc[UR32], RZ, !UPT")
    assert not sass_placeholder("QGMMA.64x256x32.F32.E4M3.E4M3 R24, gdesc[UR12], R24, UP0")
    assert not sass_placeholder("UTMALDG.2D [UR8], [UR4]")


FENCE_ONLY = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry fence_only(.param .u64 out)
{
    .reg .b64 p;
    .reg .f32 z;
    wgmma.fence.sync.aligned;
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
    ld.param.u64 p, [out];
    mov.f32 z, 0f00000000;
    st.global.f32 [p], z;
    ret;
}
"""


@needs_ptxas
def test_ptxas_makes_a_gmma_of_fences_alone_and_the_placeholder_rule_names_it():
    """What the rule was written from: assembled offline for sm_90a, PTX with no wgmma.mma_async holds an
    HGMMA in its SASS, which the family counts and ``sass_placeholder`` recognises."""
    record = loader.load_ptx(FENCE_ONLY, name="fence_only", target="sm_90a").record
    try:
        info = record.kernels["fence_only"]
        assert info.ptx_counts["wgmma"] == 0 and info.ptx_counts["wgmma-sync"] == 3
        assert info.sass_counts["wgmma"] >= 1, record.sass
        lines = [re.sub(r"^\s*/\*[0-9a-f]+\*/\s*", "", line).split(";")[0]
                 for line in record.sass.splitlines() if "GMMA" in line]
        assert lines and all(sass_placeholder(line) for line in lines), lines
    finally:
        loader.REGISTRY.clear()


# ---------------------------------------------------------------------------- the instruction stage on a CPU
def _report(name: str, builds: list[str] | None = None, **families: tuple[int, int]) -> KernelReport:
    counts = {f: {"ptx": 0, "sass": 0} for f in FAMILIES}
    counts.update({f.replace("_", "-"): {"ptx": p, "sass": s} for f, (p, s) in families.items()
                   if f.replace("_", "-") in FAMILIES})
    return KernelReport(name=name, target="sm_90a", families=counts, builds=builds or [])


def _on_a_cpu(*reports: KernelReport, skipped: list[str] | None = None) -> EvalResult:
    result = EvalResult(task=GEMM.id, target="sm_90a", device="cpu", kernels=list(reports),
                        skipped_checks=list(skipped or []))
    ev = SimpleNamespace(task=GEMM, options=EvalOptions(target="sm_90a"), result=result, on_gpu=False)
    inspection.instructions(ev)
    return result


def test_on_a_cpu_an_honest_kernel_meets_the_features_and_the_mark_is_left_undecided():
    result = _on_a_cpu(_report("gemm", wgmma=(4, 4), wgmma_sync=(4, 3), tma=(2, 2)))
    assert result.required_features_met is True and not result.missing_features
    assert result.arch_verified is None
    assert inspection.UNSHOWN_MARK in result.skipped_checks and len(inspection.UNSHOWN_MARK) > 40
    assert f"Not checked: {inspection.UNSHOWN_MARK}" in feedback.render(result, GEMM)


def test_instructions_in_the_ptx_that_the_sass_lacks_do_not_count():
    """Unreachable, or hidden in a way the PTX count misses: ptxas dropped them, the GPU never sees them."""
    result = _on_a_cpu(_report("gemm", wgmma=(1, 0), tma=(1, 0)))
    assert result.required_features_met is False and result.arch_verified is False
    for feature in ("wgmma", "tma"):
        why = result.missing_features[feature]
        assert "in the PTX but not in the SASS" in why and f"gemm ({feature} ptx 1, sass 0)" in why


def test_a_placeholder_gmma_without_wgmma_mma_async_in_the_ptx_is_not_wgmma():
    result = _on_a_cpu(_report("gemm", wgmma=(0, 1), wgmma_sync=(3, 2), tma_prefetch=(1, 1)))
    assert result.required_features_met is False
    assert "ptxas emits a GMMA that writes RZ" in result.missing_features["wgmma"]
    assert "found only tma-prefetch (ptx 1, sass 1)" in result.missing_features["tma"]


def test_the_ptx_and_the_sass_must_hold_the_mma_in_the_same_kernel():
    """A wgmma.mma_async ptxas dropped in one kernel, a fence's placeholder in another: no product at all."""
    result = _on_a_cpu(_report("a", wgmma=(1, 0), tma=(2, 2)), _report("b", wgmma=(0, 1), wgmma_sync=(3, 2)))
    assert "wgmma" in result.missing_features and "tma" not in result.missing_features


def test_the_ptx_counts_alone_only_where_no_sass_could_be_read():
    """The compile stage names a module whose SASS it could not read; that module's kernels are counted in
    their PTX, and the feedback says so. Any other kernel's SASS still decides."""
    ev = SimpleNamespace(task=GEMM, options=EvalOptions(target="sm_90a"), on_gpu=False,
                         result=EvalResult(task=GEMM.id, target="sm_90a", device="cpu"))
    unread = LoaderModule(name="gemm", target="sm_90a", analysis_error="cuobjdump failed: no such file",
                          kernels=[LoaderKernel(name="k", ptx={"wgmma": 4, "tma": 2})])
    kernels.add_modules(ev, [unread])
    inspection.instructions(ev)
    result = ev.result
    assert result.required_features_met is True, result.missing_features
    said = [s for s in result.skipped_checks if "counted in its PTX only" in s]
    assert len(said) == 2
    assert "the SASS of k could not be read (SASS of module gemm: cuobjdump failed" in said[0]

    read = LoaderModule(name="other", target="sm_90a", kernels=[LoaderKernel(name="k2", ptx={"wgmma": 4})])
    ev.result = EvalResult(task=GEMM.id, target="sm_90a", device="cpu")
    kernels.add_modules(ev, [read])
    inspection.instructions(ev)
    assert "in the PTX but not in the SASS" in ev.result.missing_features["wgmma"]


def test_a_module_of_the_same_name_whose_sass_is_unread_does_not_excuse_one_whose_sass_was_read():
    """The SASS counts as unread per module built, not by name: a second module under the first one's name
    whose disassembly fails must leave the first's SASS (where ptxas removed the wgmma) deciding."""
    ev = SimpleNamespace(task=GEMM, options=EvalOptions(target="sm_90a"), on_gpu=False,
                         result=EvalResult(task=GEMM.id, target="sm_90a", device="cpu"))
    kernel = LoaderKernel(name="k", ptx={"wgmma": 4, "tma": 2})
    read = LoaderModule(name="gemm", target="sm_90a", kernels=[kernel])
    unread = LoaderModule(name="gemm", target="sm_90a", analysis_error="cuobjdump failed", kernels=[kernel])
    kernels.add_modules(ev, [read, unread])
    inspection.instructions(ev)
    assert ev.result.required_features_met is False
    assert "in the PTX but not in the SASS" in ev.result.missing_features["wgmma"]
    assert ev.result.kernels[0].sass_unread == {"1:gemm": "SASS of module gemm: cuobjdump failed"}


# ---------------------------------------------------------------------------- the instruction stage on a GPU
def _row(source: str, warps: int, threads: int) -> SassRow:
    return SassRow("0x0", source, profile.sass_opcode(source), warps, threads)


def test_placeholders_and_prefetches_executed_under_the_profiler_are_not_the_feature(monkeypatch):
    """Compiled in: a wgmma.mma_async and a TMA load on a branch never taken. Executed: the fences'
    placeholder GMMA and an L2 prefetch, beside an FFMA product. Neither executed count is the feature's,
    and the placeholder does no tensor-core work."""
    rows = [_row("HGMMA.64x8x16.F16 RZ, gdesc[URZ], RZ, !UPT, gsb0", 2048, 2048 * 32),
            _row("UTMAPF.L2.1D [URZ], [UR4]", 1024, 1024),
            _row("FFMA R13, R14, R15, R13", 10**6, 32 * 10**6)]
    monkeypatch.setattr(profile, "profile_candidate",
                        lambda *a, **k: profile.Profile([KernelProfile("gemm", rows)]))
    ev = Evaluator("cpu").evaluation(GEMM, "", EvalOptions())
    ev.device = "cuda"  # pretend: only the profile call would touch the GPU, and it is replaced
    ev.result = EvalResult(task=GEMM.id, target="sm_90a", device="H100")
    ev.result.kernels = [_report("gemm", wgmma=(1, 1), wgmma_sync=(3, 2), tma=(1, 1), tma_prefetch=(1, 1))]
    inspection.instructions(ev)
    result = ev.result
    assert result.instructions["wgmma"]["executed"] == 0 and result.instructions["tma"]["executed"] == 0
    assert result.instructions["tma-prefetch"]["executed"] == 1024
    assert result.executed_work["tensor_flops"]["wgmma"] == 0
    for feature in ("wgmma", "tma"):
        assert "none was executed" in result.missing_features[feature], result.missing_features
    assert result.required_features_met is False and result.arch_verified is False


# ------------------------------------------------------------------------------------------ after the timing
def _after_timing(correct: bool | None) -> EvalResult:
    result = EvalResult(task=GEMM.id, target="sm_90a", device="cuda", correct=correct,
                        required_features_met=True, arch_verified=True)
    tensor_core_timing.judge(SimpleNamespace(task=GEMM, result=result, device="cuda",
                                             options=EvalOptions(device="cuda")))
    return result


def test_a_verdict_that_is_not_correct_carries_no_mark():
    assert _after_timing(None).arch_verified is None
    assert _after_timing(False).arch_verified is False


def test_a_commented_out_copy_of_a_kernel_is_none_of_the_module_s_functions():
    """A block comment holding a second ``.entry`` of the same name, with the wgmma the real body lacks."""
    from warpgym.env.toolchain.ptx import split_ptx_functions

    ptx = (".version 8.0\n.target sm_90a\n.address_size 64\n"
           ".visible .entry gemm(.param .u64 a)\n{\n wgmma.fence.sync.aligned;\n ret;\n}\n"
           "/*\n.visible .entry gemm(.param .u64 a)\n{\n wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16"
           " {%f1,%f2,%f3,%f4}, %rd1, %rd2, 1, 1, 1, 0, 0;\n ret;\n}\n*/\n")
    bodies = split_ptx_functions(ptx)
    assert list(bodies) == ["gemm"]
    assert "wgmma.fence" in bodies["gemm"] and "mma_async" not in bodies["gemm"]
