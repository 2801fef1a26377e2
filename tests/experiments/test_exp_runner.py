"""The runner in-process: budget caps and interrupts stop cleanly, and a resumed run repeats no call.

These use answers the evaluator rejects before any worker starts (no code, a PyTorch op in host
code), so they take well under a second each.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import warpgym.agents as agents
from exp_helpers import NO_CODE, TORCH_OP, fenced, write_experiment, write_replay
from warpgym.experiments import config, export, report, rundir, runner
from warpgym.experiments.cli import main
from warpgym.experiments.store import Store


class Counting:
    """A provider that counts the calls that reach it (what a paid API would bill)."""

    def __init__(self, inner: Any, on_call: Any = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[tuple[int, int]] = []
        self.lock = threading.Lock()
        self.on_call = on_call

    def complete(
        self, messages: list[dict[str, str]], *, metadata: dict[str, Any] | None = None, **params: Any
    ) -> Any:
        with self.lock:
            self.calls.append((metadata["sample"], metadata["turn"]))
            if self.on_call:
                self.on_call(len(self.calls))
        return self.inner.complete(messages, metadata=metadata, **params)

    async def acomplete(self, messages: list[dict[str, str]], **kw: Any) -> Any:
        return self.complete(messages, **kw)


def _setup(tmp_path: Path, samples: int = 3, extra: str = "") -> tuple[config.Experiment, Path]:
    rows = [(s, t, NO_CODE if t % 2 else fenced(TORCH_OP)) for s in range(samples) for t in (1, 2, 3)]
    replay = write_replay(tmp_path / "rec.jsonl", rows)
    exp = config.load(write_experiment(tmp_path / "exp.toml", replay, samples=samples, extra=extra))
    return exp, tmp_path / "run"


def _play(exp: config.Experiment | None, run_dir: Path, provider: Counting | None) -> runner.Outcome:
    exp, store, _ = rundir.open_run(exp, run_dir)
    try:
        providers = {"rec": provider} if provider else None
        return runner.Runner(exp, run_dir, store, providers=providers).run()
    finally:
        store.close()


def _replay(exp: config.Experiment, **kw: Any) -> Counting:
    return Counting(agents.make_provider(exp.models[0].spec), **kw)


def test_a_token_budget_stops_the_run_and_a_resume_with_a_higher_cap_finishes_it(tmp_path: Path) -> None:
    exp, run_dir = _setup(tmp_path, extra="[budget]\nmax_tokens = 2500\n")
    first = _replay(exp)
    outcome = _play(exp, run_dir, first)
    assert outcome.stopped and "token budget" in outcome.stopped
    assert first.calls == [(0, 1), (0, 2), (0, 3)]  # the third call crossed 2500; no call after it
    with Store(run_dir / "store.sqlite", readonly=True) as store:
        statuses = [e["status"] for e in store.episodes()]
        assert statuses == ["finished", "pending", "pending"]
        assert len(store.turns()) == 3
        assert store.spent() == (3000, pytest.approx(0.03))
        assert [e["kind"] for e in store.events()][-2:] == ["stopping", "stopped"]
    md, _ = report.write(run_dir, plots=False)  # a stopped run still reports what it has
    assert "stopped before the end: token budget reached" in md.read_text()
    assert "| 1 | 0.0% | 0.0% |" in md.read_text()  # one episode played: nothing compiled, nothing correct

    again = _replay(exp)  # resumed with the same cap: nothing to spend, nothing asked
    assert "token budget" in (_play(exp, run_dir, again).stopped or "") and again.calls == []

    exp.budget.max_tokens = 100_000
    second = _replay(exp)
    outcome = _play(exp, run_dir, second)
    assert outcome.stopped is None and outcome.finished == outcome.total == 3
    assert second.calls == [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3)]
    with Store(run_dir / "store.sqlite", readonly=True) as store:
        assert len(store.turns()) == 9
        turns = [(t["episode_id"], t["turn"], t["stage"]) for t in store.turns()]
        assert turns[:3] == [(1, 1, "extraction"), (1, 2, "static"), (1, 3, "extraction")]


def test_an_interrupt_stops_new_calls_and_the_resume_repeats_none(tmp_path: Path) -> None:
    exp, run_dir = _setup(tmp_path, samples=2)
    holder: dict[str, runner.Runner] = {}

    def interrupt_at(n: int) -> None:
        if n == 2:  # Ctrl-C while the second answer is being fetched
            holder["runner"]._on_signal(2, None)

    first = _replay(exp, on_call=interrupt_at)
    exp_, store, _ = rundir.open_run(exp, run_dir)
    holder["runner"] = r = runner.Runner(exp_, run_dir, store, providers={"rec": first})
    outcome = r.run()
    store.close()
    assert outcome.stopped and outcome.stopped.startswith("interrupted")
    assert first.calls == [(0, 1), (0, 2)]  # the call in flight finished; none started after it
    with Store(run_dir / "store.sqlite", readonly=True) as st:
        assert [e["status"] for e in st.episodes()] == ["stopped", "pending"]
        assert [t["turn"] for t in st.turns()] == [1, 2]  # the answer in flight was stored as its turn
        kept = st.turn_records(1)

    second = _replay(exp)
    outcome = _play(None, run_dir, second)  # resumed from the stored config alone
    assert outcome.finished == 2
    assert second.calls == [(0, 3), (1, 1), (1, 2), (1, 3)]
    with Store(run_dir / "store.sqlite", readonly=True) as st:
        assert st.turn_records(1)[:2] == kept


def test_a_resume_with_a_different_grid_is_refused(tmp_path: Path) -> None:
    exp, run_dir = _setup(tmp_path, samples=1)
    _play(exp, run_dir, _replay(exp))
    exp.samples = 2
    with pytest.raises(rundir.RunError, match="samples"):
        rundir.open_run(exp, run_dir)


def test_a_missing_api_key_fails_before_any_work_and_names_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = tmp_path / "exp.toml"
    path.write_text(
        'name = "k"\ntasks = ["math/add"]\nagents = ["one-shot"]\n\n[[models]]\n'
        'spec = "openai:gpt-5-mini"\n\n[run]\ndevices = "cpu"\n'
    )
    code = main(["run", str(path), "--run-dir", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert "line 6" in err and "gpt-5-mini" in err and "OPENAI_API_KEY" in err
    assert not (tmp_path / "run").exists()  # nothing was started


def test_run_check_prints_the_grid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp, _ = _setup(tmp_path, samples=2)
    assert main(["run", str(tmp_path / "exp.toml"), "--check"]) == 0
    assert "1 tasks x 1 agents x 1 models x 1 contexts x 2 samples = 2 episodes" in capsys.readouterr().out


def test_a_run_exported_as_replay_plays_again_with_the_same_answers(tmp_path: Path) -> None:
    exp, run_dir = _setup(tmp_path, samples=2)
    _play(exp, run_dir, _replay(exp))
    replay = export.export(run_dir, run_dir / "store.sqlite", "jsonl", tmp_path / "again.jsonl", "replay")
    again = config.load(write_experiment(tmp_path / "again.toml", replay, samples=2))
    _play(again, tmp_path / "run2", None)  # built from the file, like `warpgym run`
    with Store(run_dir / "store.sqlite", readonly=True) as a, Store(tmp_path / "run2" / "store.sqlite") as b:
        first = [(r["turn"], r["response"], r["result"]) for _, r in a.all_turn_records()]
        second = [(r["turn"], r["response"], r["result"]) for _, r in b.all_turn_records()]
    assert len(first) == 6 and [x[:2] for x in first] == [x[:2] for x in second]
    assert [(x[2] or {}).get("stage") for x in first] == [(x[2] or {}).get("stage") for x in second]
