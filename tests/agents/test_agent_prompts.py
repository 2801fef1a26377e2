"""The prompt components: templates per language and hardware context per level."""

from __future__ import annotations

import pytest
from warpgym.prompts import (
    CONTEXT_LEVELS,
    document,
    feedback_prompt,
    hardware_context,
    optimise_prompt,
    system_prompt,
    task_prompt,
    template_name,
)


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("language", ["triton", "cuda"])
def test_context_levels_grow_and_name_the_target(target: str, language: str) -> None:
    texts = {level: hardware_context(target, level, language) for level in CONTEXT_LEVELS}
    assert texts["none"] == ""
    assert f"Target hardware: {target}" in texts["specs"] and texts["specs"] in texts["full"]
    assert document(target).strip() in texts["full"]
    assert ("Triton on Hopper and Blackwell" in texts["full"]) == (language == "triton")
    assert len(texts["full"]) > 4 * len(texts["specs"])
    system = {level: system_prompt(language=language, target=target, entrypoint="gemm", context=level)
              for level in CONTEXT_LEVELS}
    assert all("`gemm`" in s for s in system.values())
    assert system["none"] in system["specs"].replace(texts["specs"].strip(), "").replace("\n\n\n", "\n")
    assert "wgmma" in texts["specs"] and ("tcgen05" in texts["specs"])


def test_language_variants_differ() -> None:
    assert template_name("system", "triton") == "system_triton.j2"
    assert template_name("system", "cuda") == "system_cuda.j2"
    assert template_name("task", "cuda") == "task.j2"
    triton = system_prompt(language="triton", target="sm_90a", entrypoint="add")
    cuda = system_prompt(language="cuda", target="sm_90a", entrypoint="add")
    assert "@triton.jit" in triton and "warpgym.loader" in cuda
    assert "- `load_cuda(source: str" in cuda and "- `tensor_map(" in cuda  # the loader's real signatures
    opt_t = optimise_prompt(turn=2, max_turns=4, feedback="CORRECT", target="sm_90a", language="triton")
    opt_c = optimise_prompt(turn=2, max_turns=4, feedback="CORRECT", target="sm_100a", language="cuda")
    assert "num_stages" in opt_t and "tcgen05" in opt_c


def test_feedback_and_task_messages() -> None:
    text = feedback_prompt(turn=1, max_turns=3, feedback="Verdict: INCORRECT\nmax abs error 0.7")
    assert "Turn 1 of 3" in text and "max abs error 0.7" in text and "2 turns left" in text
    problem = feedback_prompt(turn=3, max_turns=4, extraction_problem="Your answer contained no code.",
                              best={"turn": 2, "reward": 1.5, "candidate": "def add(x, y): ..."})
    assert "could not be judged" in problem and "no code" in problem and "(turn 2, reward 1.500)" in problem
    assert "1 turn left" in problem
    task = task_prompt(statement="Task math/add\n\nAdd.", target="sm_90a", entrypoint="add")
    assert task.startswith("Task math/add") and "`add`" in task


def test_levels_are_defined_once() -> None:
    from warpgym.agents import CONTEXT_LEVELS as AGENT_LEVELS
    from warpgym.experiments.context_levels import context_names

    assert AGENT_LEVELS is CONTEXT_LEVELS and tuple(context_names({})) == CONTEXT_LEVELS


def test_unknown_level_and_target() -> None:
    with pytest.raises(ValueError):
        hardware_context("sm_90a", "most", "triton")
    with pytest.raises(KeyError):
        hardware_context("sm_80", "specs", "triton")
