"""The LangGraph loops end to end: the replay provider answers, the real environment judges on CPU.

Task math/add. Its reference solution is the right answer; breaking its mask makes a wrong one
(the last element of every block is never written). The session's CPU evaluator (one worker
process, tests/conftest.py) serves every test, because starting one costs seconds.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from warpgym.agents import LOOPS, EpisodeSettings, TurnRecord, arun_episode, make_provider, run_episode
from warpgym.agents.replay import ReplayMissing, write_replay
from warpgym.env import Evaluator, KernelEnv, RewardConfig
from warpgym.tasks import get_task

TASK = "math/add"
GOOD = get_task(TASK).solution_source()
WRONG = GOOD.replace("mask = offsets < n", "mask = offsets < n - 1")
REJECTED = GOOD.replace("return out", "return x + y")  # host-side PyTorch compute: rejected statically
assert WRONG != GOOD and REJECTED != GOOD


def answer(code: str, words: str = "Plan: one masked load-add-store per element.") -> str:
    return f"{words}\n\n```python\n{code}```\n"


@pytest.fixture
def env_factory(cpu_evaluator: Evaluator) -> Any:
    """Environments sharing the session's CPU evaluator (tests/conftest.py): its worker stays warm."""

    def make(max_turns: int) -> KernelEnv:
        return KernelEnv(TASK, device="cpu", max_turns=max_turns, evaluator=cpu_evaluator, timing=False)

    return make


def replay(tmp_path: Path, answers: list[str], **extra: Any) -> Any:
    rows = [{"task": TASK, "turn": i + 1, "text": text, "input_tokens": 100 * (i + 1), "output_tokens": 50,
             "cost_usd": 0.01, **extra} for i, text in enumerate(answers)]
    return make_provider(f"replay:{write_replay(tmp_path / 'replay.jsonl', rows)}")


def test_registry_has_the_loops() -> None:
    assert {"one-shot", "fix-retry"} <= set(LOOPS)
    assert LOOPS["fix-retry"].defaults == {"optimise": True, "keep_optimising": False}
    with pytest.raises(KeyError, match="unknown loop"):
        LOOPS["no-such-loop"]


def test_routing() -> None:
    from warpgym.agents.loops import Episode, next_phase

    ep = Episode(task=get_task(TASK), loop="fix-retry", provider=None, env=None, context="none",  # type: ignore[arg-type]
                 history="full", sample=0, max_turns=4, target="sm_90a")

    def record(result: dict[str, Any] | None, terminated: bool = False) -> TurnRecord:
        return TurnRecord(turn=1, phase="generate", messages=[], response="", candidate=None,
                          extraction_problem=None, feedback="", result=result, terminated=terminated)

    assert next_phase(ep, record(None), 1) == "fix"
    assert next_phase(ep, record({"compiled": True, "correct": False}), 1) == "fix"
    assert next_phase(ep, record({"compiled": True, "correct": True}, terminated=True), 1) == "done"
    assert next_phase(ep, record({"compiled": True, "correct": True}), 1) == "optimise"  # correct, too slow
    missing = {"compiled": True, "correct": True, "required_features_met": False}
    assert next_phase(ep, record(missing), 1) == "fix"
    assert next_phase(ep, record({"compiled": True, "correct": None, "violations": []}), 1) == "done"
    assert next_phase(ep, record({"compiled": False, "correct": None}), 1) == "fix"
    assert next_phase(ep, record({"compiled": True, "correct": False}), 4) == "done"  # the turn budget
    ep.options["keep_optimising"] = True
    assert next_phase(ep, record({"compiled": True, "correct": True}, terminated=True), 1) == "optimise"
    ep.loop = "one-shot"
    assert next_phase(ep, record({"compiled": True, "correct": False}), 1) == "done"


def test_wrong_first_answer_fixed_at_turn_two(tmp_path: Path, env_factory: Any) -> None:
    provider = replay(tmp_path, [answer(WRONG), answer(GOOD, "The mask dropped the last element; fixed.")])
    seen: list[TurnRecord] = []
    result = run_episode(EpisodeSettings(TASK, loop="fix-retry", max_turns=4, context="specs"),
                         provider=provider, env=env_factory(4), on_turn=seen.append)
    assert [t.turn for t in result.turns] == [1, 2] and seen == result.turns
    first, second = result.turns
    assert first.phase == "generate" and first.candidate == WRONG and first.result is not None
    assert first.result["compiled"] and first.result["correct"] is False and first.reward == 0.0
    assert "INCORRECT" in first.feedback and not first.terminated and not first.truncated
    assert second.phase == "fix" and second.correct and second.terminated and second.reward > 0
    assert result.solved and result.best is second
    # The fix turn saw the whole history and the judge's verdict on turn 1.
    sent = second.messages
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert "Target hardware: sm_90a" in sent[0]["content"]  # context level "specs"
    assert "INCORRECT" in sent[3]["content"] and "expected" in sent[3]["content"]
    # Each turn's record keeps the root of its inputs (to replay it); the model never read it.
    roots = [t.result["input_seed"] for t in result.turns]
    assert all(isinstance(r, int) for r in roots) and roots[0] != roots[1]
    assert not any(str(r) in m["content"] for r in roots for m in sent)
    # What the replay provider was asked: the metadata that finds a recorded answer.
    assert [c["metadata"]["turn"] for c in provider.calls] == [1, 2]
    meta = provider.calls[1]["metadata"]
    assert meta["phase"] == "fix" and meta["loop"] == "fix-retry"
    assert (first.input_tokens, second.input_tokens, first.cost_usd) == (100, 200, 0.0)  # replayed: not paid
    assert (first.origin, first.recorded_cost_usd) == ("replayed", 0.01)


def test_answer_without_code_becomes_feedback(tmp_path: Path, env_factory: Any) -> None:
    provider = replay(tmp_path, ["I would write a Triton kernel with a mask.", answer(GOOD)])
    result = run_episode(EpisodeSettings(TASK, loop="fix-retry", max_turns=3), provider=provider,
                         env=env_factory(3))
    first, second = result.turns
    assert first.candidate is None and first.result is None and first.reward == 0.0
    assert "no code" in (first.extraction_problem or "") and first.feedback == first.extraction_problem
    assert "no code" in second.messages[-1]["content"]
    assert second.correct and result.solved and result.best is second

    # One shot: no code is the end of the episode, and nothing is evaluated.
    provider = replay(tmp_path, ["No code today."])
    result = run_episode(EpisodeSettings(TASK, loop="one-shot", max_turns=3), provider=provider,
                         env=env_factory(3))
    assert len(result.turns) == 1 and not result.solved and result.best is None
    assert result.turns[0].result is None


def test_turn_limit_reached(tmp_path: Path, env_factory: Any) -> None:
    provider = replay(tmp_path, [answer(WRONG), answer(REJECTED), answer(GOOD)])
    result = run_episode(EpisodeSettings(TASK, loop="fix-retry", max_turns=2, history="last"),
                         provider=provider, env=env_factory(2))
    assert [t.turn for t in result.turns] == [1, 2]  # the third answer is never asked for
    assert len(provider.calls) == 2
    last = result.turns[-1]
    assert last.truncated and not last.terminated and not result.solved and result.best is None
    assert last.result is not None and last.result["violations"]  # rejected by the static policy
    assert "Turn 1 of 2" in last.messages[-1]["content"]


def test_history_last_keeps_only_the_last_attempt_and_shows_best(tmp_path: Path, env_factory: Any) -> None:
    # correct -> optimise -> a broken "optimisation" -> fix, which must show the best correct module.
    answers = [answer(GOOD), answer(WRONG, "Faster?"), "I am not sure.", answer(GOOD)]
    provider = replay(tmp_path, answers)
    settings = EpisodeSettings(TASK, loop="fix-retry", max_turns=4, history="last",
                               loop_args={"keep_optimising": True})
    result = run_episode(settings, provider=provider, env=env_factory(4))
    phases = [t.phase for t in result.turns]
    assert phases == ["generate", "optimise", "fix", "fix"]
    third = result.turns[2].messages
    assert len(third) == 4 and third[2]["content"].startswith("Faster?")  # turn 1 is gone from the prompt
    assert "best correct candidate so far (turn 1" in third[3]["content"]
    assert result.best is not None and result.best.turn == 1  # equal rewards: the earliest stays best
    assert result.turns[3].terminated and not result.turns[3].truncated and result.solved


def test_resume_continues_without_asking_again(tmp_path: Path, env_factory: Any) -> None:
    provider = replay(tmp_path, [answer(WRONG), answer(GOOD)])
    wrong_turn = TurnRecord(turn=1, phase="generate", messages=[], response=answer(WRONG), candidate=WRONG,
                            extraction_problem=None, feedback="Verdict: INCORRECT (recorded)",
                            result={"compiled": True, "correct": False}, reward=0.0)
    record = TurnRecord.from_dict(wrong_turn.to_dict())
    settings = EpisodeSettings(TASK, loop="fix-retry", max_turns=3)
    result = run_episode(settings, provider=provider, env=env_factory(3), resume=[record])
    assert [c["metadata"]["turn"] for c in provider.calls] == [2]  # turn 1 was not asked for again
    assert result.turns[0] is record and result.turns[1].phase == "fix" and result.solved
    assert "Verdict: INCORRECT (recorded)" in result.turns[1].messages[-1]["content"]
    # A finished episode resumes to itself.
    again = run_episode(settings, provider=provider, env=env_factory(3), resume=result.turns)
    assert len(provider.calls) == 1 and again.solved and [t.turn for t in again.turns] == [1, 2]


def test_async_one_shot_and_missing_replay(tmp_path: Path, env_factory: Any) -> None:
    provider = replay(tmp_path, [answer(GOOD)], loop="one-shot")
    result = asyncio.run(arun_episode(EpisodeSettings(TASK, loop="one-shot", max_turns=1), provider=provider,
                                      env=env_factory(1)))
    assert result.solved and result.turns[0].correct and result.loop == "one-shot"
    with pytest.raises(ReplayMissing):  # the recorded answers are for one-shot only
        run_episode(EpisodeSettings(TASK, loop="fix-retry", max_turns=1), provider=provider,
                    env=env_factory(1))


def test_bad_arguments(tmp_path: Path, env_factory: Any) -> None:
    provider = replay(tmp_path, [answer(GOOD)])
    with pytest.raises(ValueError, match="context"):
        EpisodeSettings(TASK, loop="one-shot", context="everything")
    with pytest.raises(ValueError, match="history"):
        EpisodeSettings(TASK, loop="one-shot", history="some")
    with pytest.raises(ValueError, match="max_turns"):
        EpisodeSettings(TASK, loop="one-shot", max_turns=0)
    with pytest.raises(ValueError, match="allows 1 turns"):
        run_episode(EpisodeSettings(TASK, loop="fix-retry", max_turns=3), provider=provider,
                    env=env_factory(1))
    assert provider.calls == []


class _RecordingEnv:
    """Stands in for KernelEnv: records what each step is handed and judges every candidate correct."""

    def __init__(self, task_id: str, max_turns: int) -> None:
        from warpgym.env import EvalOptions

        self.task, self.max_turns, self.options = get_task(task_id), max_turns, EvalOptions(device="cpu")
        self.stepped: list[Any] = []
        self.reward_fn = RewardConfig()

    def reset(self, seed: int = 0, options: dict | None = None) -> tuple[dict, dict]:
        return {}, {}

    def step(self, candidate: Any) -> tuple[dict, float, bool, bool, dict]:
        self.stepped.append(candidate)
        return {"feedback": "CORRECT"}, 1.0, True, False, {"result": {"compiled": True, "correct": True}}

    def close(self) -> None:
        pass


def test_an_answer_with_named_files_reaches_the_environment_as_a_candidate(tmp_path: Path) -> None:
    from warpgym.env.candidate import Candidate

    module = ('from warpgym import loader\n\nMOD = loader.load_ptx(loader.attachment("gemm.ptx"))\n\n\n'
              'def gemm(a, b):\n    return a\n')
    ptx = ".version 8.7\n.target sm_90a\n"
    text = f"Plan.\n\n```python\n{module}```\n\n```ptx gemm.ptx\n{ptx}```\n"
    rows = [{"task": "ptx/gemm-bf16", "turn": 1, "text": text, "input_tokens": 1, "output_tokens": 1}]
    provider = make_provider(f"replay:{write_replay(tmp_path / 'replay.jsonl', rows)}")
    env = _RecordingEnv("ptx/gemm-bf16", 2)
    result = run_episode(EpisodeSettings("ptx/gemm-bf16", loop="one-shot", max_turns=2), provider=provider,
                         env=env)  # type: ignore[arg-type]
    assert env.stepped == [Candidate(module, {"gemm.ptx": ptx})]
    (turn,) = result.turns
    assert turn.candidate == module and turn.attachments == {"gemm.ptx": ptx}
    stored = TurnRecord.from_dict(turn.to_dict())
    assert stored.attachments == {"gemm.ptx": ptx}
    older = {k: v for k, v in turn.to_dict().items() if k != "attachments"}  # stored before attachments
    assert TurnRecord.from_dict(older).attachments == {}


def test_a_plain_module_reaches_the_environment_as_its_source(tmp_path: Path) -> None:
    rows = [{"task": TASK, "turn": 1, "text": answer(GOOD), "input_tokens": 1, "output_tokens": 1}]
    provider = make_provider(f"replay:{write_replay(tmp_path / 'replay.jsonl', rows)}")
    env = _RecordingEnv(TASK, 2)
    result = run_episode(EpisodeSettings(TASK, loop="one-shot", max_turns=2), provider=provider,
                         env=env)  # type: ignore[arg-type]
    assert env.stepped == [GOOD] and result.turns[0].attachments == {}
