"""Instructions that do not do a required feature's work do not meet it, on the CPU as on a GPU: wgmma and TMA
written inside a PTX block comment (never assembled), or only wgmma's fences, commits and waits beside a TMA
prefetch into L2, with the product computed by FMA loops (ptxas's SASS then holds a placeholder HGMMA that
writes RZ, and an UTMAPF)."""

from __future__ import annotations

import pytest
from warpgym.tasks import get_task

from .conftest import DEV, candidate_source, explain


@pytest.mark.parametrize("name", ["comment_features", "fence_only"])
def test_instructions_that_do_no_work_do_not_meet_the_required_features(cpu_evaluator, name):
    result = cpu_evaluator.evaluate(get_task("ptx/gemm-bf16"), candidate_source(f"loader/{name}"), DEV)
    assert result.compiled and not result.violations, explain(result)
    assert result.required_features_met is False and result.arch_verified is False, result.missing_features
    assert set(result.missing_features) == {"wgmma", "tma"}
    assert all(len(why) > 40 for why in result.missing_features.values())
    counts = result.instructions
    if name == "comment_features":
        assert counts["wgmma"]["ptx"] == counts["tma"]["ptx"] == 0  # a comment is not code
    else:
        assert counts["wgmma"] == {"ptx": 0, "sass": 1, "executed": None}  # ptxas's placeholder
        assert counts["wgmma-sync"]["ptx"] == 3 and counts["tma-prefetch"]["sass"] == 1
        assert "writes RZ" in result.missing_features["wgmma"]
        assert "found only tma-prefetch" in result.missing_features["tma"]
    for feature, why in result.missing_features.items():
        assert f"Missing required feature {feature}: {why}." in result.feedback
