"""Experiment files: a mistake is reported with the file, the line and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from warpgym.experiments import config
from warpgym.experiments.config import ConfigError

GOOD = """\
name = "t"
tasks = [
  "math/add",
  "normalization/*",
]
agents = ["one-shot", "fix-retry"]
models = ["openai:gpt-5-mini"]
contexts = ["none", "full"]
samples = 2
max_turns = 3

[run]
devices = "cpu"
workers = 1

[budget]
max_cost_usd = 1.5
"""


def _error(text: str, tmp_path: Path) -> str:
    path = tmp_path / "exp.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        config.load(path)
    return str(info.value)


def test_a_valid_file_resolves_its_tasks(tmp_path: Path) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(GOOD)
    exp = config.load(path)
    assert exp.resolved_tasks[0] == "math/add"
    assert "normalization/softmax" in exp.resolved_tasks and "normalization/layer-norm" in exp.resolved_tasks
    assert exp.models[0].label == "openai:gpt-5-mini"
    assert exp.budget.max_cost_usd == 1.5


def test_a_misspelt_key_names_its_line_field_and_the_likely_key(tmp_path: Path) -> None:
    msg = _error(GOOD.replace("max_turns = 3", "max_turn = 3"), tmp_path)
    assert "line 10" in msg and "max_turn" in msg and "did you mean 'max_turns'" in msg


def test_a_misspelt_key_in_a_table_names_the_table(tmp_path: Path) -> None:
    msg = _error(GOOD.replace("workers = 1", "wrokers = 1"), tmp_path)
    assert "line 14" in msg and "run.wrokers" in msg and "'workers'" in msg


def test_an_unknown_task_in_a_multiline_array_points_at_its_own_line(tmp_path: Path) -> None:
    msg = _error(GOOD.replace('"math/add"', '"math/ad"'), tmp_path)
    assert "line 3" in msg and "tasks[0]" in msg and "math/ad" in msg and "did you mean math/add" in msg


def test_unknown_agent_context_and_provider_are_all_reported(tmp_path: Path) -> None:
    text = (
        GOOD.replace('"fix-retry"]', '"fix-retyr"]')
        .replace('"full"]', '"fulll"]')
        .replace("openai:gpt-5-mini", "opneai:gpt-5-mini")
    )
    msg = _error(text, tmp_path)
    lines = msg.splitlines()
    assert any("line 6" in x and "agents[1]" in x and "fix-retry" in x for x in lines)
    assert any("line 8" in x and "contexts[1]" in x and "fulll" in x for x in lines)
    assert any("line 7" in x and "models[0].spec" in x and "unknown provider" in x for x in lines)


def test_a_models_table_error_names_the_table_entry(tmp_path: Path) -> None:
    text = GOOD.replace('models = ["openai:gpt-5-mini"]\n', "") + (
        '\n[[models]]\nspec = "openai:gpt-5-mini"\n\n[[models]]\nspec = "anthropic:claude"\ntemperature = 0\n'
    )
    msg = _error(text, tmp_path)
    assert "models[1].temperature" in msg and "line 23" in msg and "unknown key" in msg
    assert "params = {" in msg  # where call parameters go


def test_a_bad_value_names_the_field(tmp_path: Path) -> None:
    msg = _error(GOOD.replace("samples = 2", "samples = 0"), tmp_path)
    assert "line 9" in msg and "samples" in msg and "greater than or equal to 1" in msg
    msg = _error(GOOD.replace('devices = "cpu"', 'devices = "gpu"'), tmp_path)
    assert "line 13" in msg and "run.devices" in msg


def test_missing_required_fields_and_syntax_errors(tmp_path: Path) -> None:
    msg = _error(GOOD.replace('agents = ["one-shot", "fix-retry"]\n', ""), tmp_path)
    assert "agents: is required" in msg
    msg = _error(GOOD.replace("samples = 2", "samples = "), tmp_path)
    assert "not valid TOML" in msg and "line 9" in msg


def test_replay_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "rec.jsonl").write_text('{"task": "math/add", "sample": 0, "turn": 1, "text": "x"}\n')
    exp_path = tmp_path / "exp.toml"
    exp_path.write_text(GOOD.replace("openai:gpt-5-mini", "replay:rec.jsonl"))
    exp = config.load(exp_path)
    assert exp.models[0].spec == f"replay:{(tmp_path / 'rec.jsonl').resolve()}"
    assert exp.models[0].label == "replay:rec"
    msg = _error(GOOD.replace("openai:gpt-5-mini", "replay:missing.jsonl"), tmp_path)
    assert "line 7" in msg and "no recordings" in msg


def test_the_shipped_configs_are_valid() -> None:
    for path in sorted(config.BUNDLED.glob("*.toml")):
        exp = config.load(path)
        assert exp.resolved_tasks, path
    assert config.find("quickstart") == config.BUNDLED / "quickstart.toml"
    with pytest.raises(ConfigError, match="bundled configs"):
        config.find("no-such-experiment")


def test_a_pass_k_above_samples_names_the_key_and_its_line(tmp_path: Path) -> None:
    text = GOOD + "\n[metrics]\npass_k = [\n  1,\n  2,\n  5,\n]\n"
    lines = text.splitlines()
    msg = _error(text, tmp_path)
    assert f"line {lines.index('  5,') + 1}" in msg and "metrics.pass_k" in msg
    assert "pass@5 needs at least 5 samples" in msg and "samples = 2" in msg
    assert "pass@2" not in msg and "pass@1" not in msg  # k <= samples is fine
    path = tmp_path / "exp.toml"
    path.write_text(text.replace("  5,\n", ""))
    assert config.load(path).metrics.pass_k == [1, 2]


def test_the_default_pass_k_is_not_an_error_with_few_samples(tmp_path: Path) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(GOOD.replace("samples = 2", "samples = 1"))
    assert config.load(path).samples == 1  # the default [1, 5, 10]: pass@5 and pass@10 just go unreported
