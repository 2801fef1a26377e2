"""The compiled-instruction report of a loader module is the judge's evidence for the tensor-core rules: it is
taken when the module is built, before the candidate holds it, and only modules built that way reach the GPU.
A candidate that rewrites its kernels' counts, or the record's report, changes nothing the judge reads."""

from __future__ import annotations

import dataclasses

import pytest
from warpgym.env import EvalOptions
from warpgym.env.toolchain.registry import REGISTRY
from warpgym.tasks import get_task

from .conftest import candidate_source, explain

DEV = EvalOptions(device="cpu", shape_sets=("dev",))


@pytest.mark.parametrize("name", ["forged_counts", "forged_report", "hidden_mma_sync"])
def test_counts_rewritten_after_the_build_are_not_what_the_judge_reads(cpu_evaluator, name):
    result = cpu_evaluator.evaluate(get_task("ptx/gemm-bf16"), candidate_source(f"loader/{name}"), DEV)
    assert result.required_features_met is False, explain(result)
    assert not result.arch_verified, explain(result)
    assert "no wgmma instruction in any compiled kernel" in result.missing_features.get("wgmma", "")
    if name == "hidden_mma_sync":
        assert "mma.sync" in (result.other_tensor_cores or {}), result.other_tensor_cores


def test_only_a_module_the_loader_built_is_loaded_and_its_report_is_kept_as_built():
    from warpgym.env.toolchain import loader

    ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n    ret;\n}\n"
    module = loader.load_ptx(ptx, name="report_kept")
    try:
        built = loader.modules_report()[-1]
        module.record.kernels["k"].ptx_counts["wgmma"] = 64
        module.record.to_wire = lambda: {"forged": True}
        assert loader.modules_report()[-1] == built
        assert REGISTRY.image(module.record)[0] == ptx
        stranger = dataclasses.replace(module.record, name="never_built")
        with pytest.raises(LookupError, match="not built by load_cuda or load_ptx"):
            REGISTRY.image(stranger)
    finally:
        REGISTRY.clear()
