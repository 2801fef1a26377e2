"""The response cache as an experiment uses it: a rerun of a sampled experiment samples again, an
unsampled one is answered from the cache and says so, ``off`` never reads, ``read-only`` never writes,
and every call is counted as paid, cached or replayed with only paid cost called cost.

Runs go through ``warpgym run`` against a loopback OpenAI-compatible server (``fake_openai.py``) that
logs every request, so "paid" means a request reached it. The answers hold no code, so nothing is
evaluated and each run takes well under a second.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from exp_helpers import TASK, write_experiment, write_replay
from fake_openai import COST, FakeOpenAI
from warpgym.experiments import compare, export, report
from warpgym.experiments.cli import main
from warpgym.experiments.report_markdown import render
from warpgym.experiments.store import Store


@pytest.fixture
def api() -> Any:
    server = FakeOpenAI()
    yield server
    server.close()


def _experiment(tmp_path: Path, api: FakeOpenAI, *, temperature: float, cache: str | None = None,
                samples: int = 1) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(f"""
name = "cache-test"
tasks = ["{TASK}"]
agents = ["one-shot"]
samples = {samples}
max_turns = 1

[[models]]
spec = "openai:gpt-5-mini"
name = "fake"
params = {{ base_url = "{api.url}", api_key = "sk-test", temperature = {temperature}, max_attempts = 1 }}
prices = {{ "gpt-5-mini" = {{ input = 1.0, output = 2.0 }} }}

[run]
devices = "cpu"
workers = 1
concurrency = 1
cache_dir = "cache"
heldout = false
{f'cache = "{cache}"' if cache else ""}

[metrics]
pass_k = [1]
""")
    return path


def _run(exp: Path, run_dir: Path, *extra: str) -> dict[str, Any]:
    """Play the experiment into ``run_dir`` and return its report's figures (metrics.json)."""
    assert main(["run", str(exp), "--run-dir", str(run_dir), "--quiet", "--no-report", *extra]) == 0
    report.write(run_dir, plots=False)
    return json.loads((run_dir / "metrics.json").read_text())


def _turns(run_dir: Path) -> list[dict[str, Any]]:
    with Store(run_dir / "store.sqlite", readonly=True) as store:
        return [r for _, r in store.all_turn_records()]


def _cache_entries(tmp_path: Path) -> int:
    return len(list((tmp_path / "cache").rglob("*.json")))


@pytest.mark.parametrize(("temperature", "samples"), [(0.7, 1), (0.0, 2)])
def test_a_rerun_of_a_sampled_experiment_samples_again(tmp_path: Path, api: FakeOpenAI, temperature: float,
                                                       samples: int) -> None:
    exp = _experiment(tmp_path, api, temperature=temperature, samples=samples)
    first = _run(exp, tmp_path / "a")
    second = _run(exp, tmp_path / "b")
    assert len(api.requests) == 2 * samples  # the default cache wrote the answers but never read them
    a, b = _turns(tmp_path / "a"), _turns(tmp_path / "b")
    assert {t["response"] for t in a}.isdisjoint({t["response"] for t in b})
    for m in (first, second):
        assert m["calls"]["paid"]["calls"] == samples and m["calls"]["cached"]["calls"] == 0
        assert m["calls"]["paid_cost_usd"] == pytest.approx(samples * COST)
        assert m["overall"]["cost_usd"] == pytest.approx(samples * COST)
    assert all(t["origin"] == "paid" and t["cost_usd"] == pytest.approx(COST) for t in a + b)
    text = (tmp_path / "b" / "report.md").read_text()
    assert f"{samples} paid ($0.0020" in text or f"{samples} paid ($0.0040" in text
    assert "response cache" not in text.split("## Model calls")[1].split("##")[0]


@pytest.mark.parametrize("cache", [None, "read-write"])
def test_an_unsampled_rerun_is_answered_from_the_cache_and_says_so(tmp_path: Path, api: FakeOpenAI,
                                                                   cache: str | None) -> None:
    exp = _experiment(tmp_path, api, temperature=0, cache=cache)
    _run(exp, tmp_path / "a")
    second = _run(exp, tmp_path / "b")
    assert len(api.requests) == 1
    [paid], [cached] = _turns(tmp_path / "a"), _turns(tmp_path / "b")
    assert cached["response"] == paid["response"]
    assert (paid["origin"], paid["cost_usd"]) == ("paid", pytest.approx(COST))
    assert (cached["origin"], cached["cost_usd"]) == ("cached", 0.0)
    assert cached["recorded_cost_usd"] == pytest.approx(COST)
    calls = second["calls"]
    assert (calls["paid"]["calls"], calls["cached"]["calls"], calls["paid_cost_usd"]) == (0, 1, 0.0)
    assert calls["cached"]["recorded_cost_usd"] == pytest.approx(COST)
    assert second["overall"]["cost_usd"] == 0.0  # what was paid, not what the answer once cost
    text = (tmp_path / "b" / "report.md").read_text()
    mode = cache or "auto"
    want = f'1 answered from the response cache (not paid now; $0.0020 when first paid; cache = "{mode}")'
    assert want in text
    assert "0 paid ($0.0000, 0 tokens)" in text


def test_off_never_reads_nor_writes(tmp_path: Path, api: FakeOpenAI) -> None:
    exp = _experiment(tmp_path, api, temperature=0, cache="read-write")
    _run(exp, tmp_path / "a")
    assert (len(api.requests), _cache_entries(tmp_path)) == (1, 1)
    off = _experiment(tmp_path, api, temperature=0, cache="off")
    m = _run(off, tmp_path / "b")
    assert len(api.requests) == 2 and _cache_entries(tmp_path) == 1
    assert m["calls"]["paid"]["calls"] == 1 and _turns(tmp_path / "b")[0]["origin"] == "paid"
    # --no-cache on the command line is the same as cache = "off" in the file.
    _run(_experiment(tmp_path, api, temperature=0, cache="read-write"), tmp_path / "c", "--no-cache")
    assert len(api.requests) == 3


def test_read_only_never_writes_but_reads(tmp_path: Path, api: FakeOpenAI) -> None:
    read_only = _experiment(tmp_path, api, temperature=0, cache="read-only")
    _run(read_only, tmp_path / "a")
    _run(read_only, tmp_path / "b")
    assert len(api.requests) == 2 and _cache_entries(tmp_path) == 0
    _run(_experiment(tmp_path, api, temperature=0, cache="read-write"), tmp_path / "c")
    assert len(api.requests) == 3 and _cache_entries(tmp_path) == 1
    m = _run(_experiment(tmp_path, api, temperature=0, cache="read-only"), tmp_path / "d")
    assert len(api.requests) == 3 and m["calls"]["cached"]["calls"] == 1
    # A sampled experiment told to read-write reuses its answers: asked for, so allowed.
    _run(_experiment(tmp_path, api, temperature=0.9, cache="read-write"), tmp_path / "e")
    _run(_experiment(tmp_path, api, temperature=0.9, cache="read-write"), tmp_path / "f")
    assert len(api.requests) == 4


def test_progress_compare_and_export_label_the_answers(tmp_path: Path, api: FakeOpenAI,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    exp = _experiment(tmp_path, api, temperature=0, cache="read-write")
    _run(exp, tmp_path / "a")
    capsys.readouterr()
    assert main(["run", str(exp), "--run-dir", str(tmp_path / "b"), "--no-report"]) == 0
    out = capsys.readouterr().out
    assert "1 model call: 0 paid ($0.0000, 0 tokens), 1 answered from the response cache" in out
    doc = render(compare.compare([tmp_path / "a", tmp_path / "b"]))
    section = doc.split("## Model calls")[1]
    rows = [line for line in section.splitlines() if line.startswith("| a ") or line.startswith("| b ")]
    assert rows[0].replace(" ", "") == "|a|read-write|1|1,500|$0.0020|0|0|-|"
    assert rows[1].replace(" ", "") == "|b|read-write|0|0|$0.0000|1|0|$0.0020|"
    out_file = export.export(tmp_path / "b", tmp_path / "b" / "store.sqlite", "jsonl", what="calls")
    [call] = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert (call["origin"], call["cost_usd"]) == ("cached", 0.0)
    assert call["recorded_cost_usd"] == pytest.approx(COST)
    assert call["task"] == TASK and call["agent"] == "one-shot"
    steps = export.export(tmp_path / "b", tmp_path / "b" / "store.sqlite", "jsonl")
    [step] = [json.loads(line) for line in steps.read_text().splitlines()]
    assert step["origin"] == "cached" and step["cost_usd"] == 0.0


def test_a_replayed_run_reports_the_recorded_cost_as_recorded(tmp_path: Path) -> None:
    rows = [(0, t, "No code yet, sorry.") for t in (1, 2)]
    replay = write_replay(tmp_path / "rec.jsonl", rows)  # each answer recorded at $0.01
    exp = write_experiment(tmp_path / "exp.toml", replay, samples=1, max_turns=2)
    m = _run(exp, tmp_path / "run")
    calls = m["calls"]
    assert (calls["replayed"]["calls"], calls["paid"]["calls"], calls["paid_cost_usd"]) == (2, 0, 0.0)
    assert calls["replayed"]["recorded_cost_usd"] == pytest.approx(0.02)
    assert m["overall"]["cost_usd"] == 0.0
    text = (tmp_path / "run" / "report.md").read_text()
    assert "2 replayed from recordings (not paid; $0.0200 when first paid)" in text
    # Exported again as a replay file, the answers keep their recorded cost, not the 0 this run paid.
    again = export.export(tmp_path / "run", tmp_path / "run" / "store.sqlite", "jsonl", what="replay")
    assert [json.loads(line)["cost_usd"] for line in again.read_text().splitlines()] == [0.01, 0.01]


def test_the_cache_mode_is_checked_with_its_line(tmp_path: Path, api: FakeOpenAI,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    exp = _experiment(tmp_path, api, temperature=0, cache="sometimes")
    assert main(["run", str(exp), "--check"]) == 2
    err = capsys.readouterr().err
    line = next(i for i, t in enumerate(exp.read_text().splitlines(), 1) if t.startswith("cache ="))
    assert f"exp.toml, line {line}: run.cache: unknown cache mode 'sometimes'" in err
    assert '"auto", "read-write", "read-only", "off"' in err
