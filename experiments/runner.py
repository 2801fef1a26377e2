"""Play an experiment's grid: concurrent episodes, a pool of evaluators, every step stored.

Threads play episodes (``run.concurrency`` at once, so that many model calls are in flight);
evaluations go to the run's pool (``pool.py``): a verdict cache over an executor
(``executors.py``) of ``Evaluator``s on this host (one per GPU, or a few on the CPU), or of Ray
actors on a cluster; each evaluates one candidate at a time. Everything is committed to the run's
SQLite store as it happens:

- a model's answer, the moment it arrives (the answer journal, ``journal.py``);
- a turn, the moment the agent finishes it (``on_turn``);
- an episode's end, with its best turn (``warpgym.agents.best``) and heldout verdict.

Resuming (the same run directory again, or ``--resume``) skips finished episodes and
continues the others from their last stored turn through ``run_episode(resume=...)``, which
replays those turns without calling the model or the evaluator. An answer that was received
but whose turn was not stored (a kill during its evaluation) is served from the journal, so
no call is paid twice even with the provider's cache turned off.

Stopping: the budget caps and the first Ctrl-C (or SIGTERM) stop new model calls; calls in
flight finish and are stored; unfinished episodes stay resumable. A second Ctrl-C quits at once
(what was committed stays committed).
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warpgym.agents.best import best_index

from . import accounts, agent_refs, context_levels
from .config import Experiment
from .journal import JournalProvider
from .parsing import serialised_parsing
from .pool import EvaluatorPool, PooledEvaluator, make_executor
from .progress import Display
from .providers import build_providers, response_cache_dir
from .rundir import RunError, open_run, save_resolved
from .store import Store, turn_columns

if TYPE_CHECKING:
    from warpgym.agents import Completion, Provider
    from warpgym.tasks import Task


class StopRun(BaseException):  # noqa: N818 - a signal, not an error; BaseException so loops never swallow it
    """Raised inside an episode to stop it cleanly (budget reached, Ctrl-C)."""


# --------------------------------------------------------------------------- the runner
@dataclass
class Outcome:
    run_dir: Path
    finished: int
    total: int
    stopped: str | None
    errors: int
    elapsed_s: float
    evaluations: int = 0
    eval_cache_hits: int = 0
    notes: list[str] = field(default_factory=list)


def grid(exp: Experiment) -> list[dict[str, Any]]:
    """Every episode, ordered so that a stopped run has covered whole samples evenly."""
    from warpgym.tasks import get_task

    rows = []
    for sample in range(exp.samples):
        for task_id in exp.resolved_tasks:
            task = get_task(task_id)
            for model in exp.models:
                for context in exp.contexts:
                    for agent in exp.agents:
                        rows.append(
                            {
                                "task": task_id,
                                "category": task.category,
                                "agent": agent,
                                "model": model.label,
                                "context": context,
                                "sample": sample,
                                "requires_features": bool(task.required_features.get(exp.target)),
                            }
                        )
    return rows


class Runner:
    def __init__(
        self,
        exp: Experiment,
        run_dir: Path,
        store: Store,
        *,
        display: Display | None = None,
        providers: dict[str, Provider] | None = None,
        pool: EvaluatorPool | None = None,
    ) -> None:
        self.exp = exp
        self.run_dir = run_dir
        self.store = store
        self.display = display or Display(exp.name, quiet=True)
        self.providers = providers
        self.pool = pool
        self.stop_reason: str | None = None
        self.stop_event = threading.Event()
        self.budget_lock = threading.Lock()
        self.spent_tokens, self.spent_cost = store.spent()
        self.errors = 0
        self._interrupts = 0
        self.levels: dict[str, dict[str, Any]] = {}

    # ------------------------------------------------------------------ stopping and budget
    def stop(self, reason: str, note: str = "") -> None:
        if not self.stop_event.is_set():
            self.stop_reason = reason
            self.stop_event.set()
            self.display.update(stopping=f"stopping: {reason}; calls in flight finish and are stored{note}")
            self.display.log(f"stopping: {reason}")
            self.store.event("stopping", reason)

    def check_stop(self) -> None:
        if self.stop_event.is_set():
            raise StopRun(self.stop_reason)
        self._check_budget()
        if self.stop_event.is_set():
            raise StopRun(self.stop_reason)

    def _check_budget(self) -> None:
        b = self.exp.budget
        if b.max_tokens is not None and self.spent_tokens >= b.max_tokens:
            self.stop(f"token budget reached ({self.spent_tokens:,} of {b.max_tokens:,})")
        elif b.max_cost_usd is not None and self.spent_cost >= b.max_cost_usd:
            self.stop(f"cost budget reached (${self.spent_cost:.2f} of ${b.max_cost_usd:.2f})")

    def charge(self, completion: Completion) -> None:
        """Count a call against the budget as ``Store.spent`` does: paid calls at their cost, replayed ones
        at their recorded cost, cached ones not at all."""
        tokens = int(completion.input_tokens or 0) + int(completion.output_tokens or 0)
        origin = completion.origin
        with self.budget_lock:
            if origin != "cached":
                self.spent_tokens += tokens
                cost = completion.cost_usd if origin == "paid" else completion.recorded_cost_usd
                self.spent_cost += float(cost or 0.0)
            self._check_budget()
        self.display.count_call(completion)

    def reused(self) -> None:
        self.display.update(reused=1)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._interrupts += 1
        if self._interrupts == 1:
            self.stop("interrupted", " (Ctrl-C again to quit at once)")
        else:
            raise KeyboardInterrupt

    def _context_levels(self) -> dict[str, dict[str, Any]]:
        """Every level's text, rendered when the run starts and read back from the run on a resume (so
        a resumed run plays the prompts it began with, whatever the documents say now)."""
        from warpgym.tasks import get_task

        stored = context_levels.load(self.run_dir)
        if stored and all(name in stored for name in self.exp.contexts):
            return stored
        exp = self.exp
        languages = {get_task(t).language for t in exp.resolved_tasks}
        base_dir = Path(exp.source_path).parent if exp.source_path else None
        plan = exp.levels()
        context_levels.store(self.run_dir, plan, context_levels.render_all(plan, exp.target, languages,
                                                                           base_dir))
        return context_levels.load(self.run_dir)

    # ------------------------------------------------------------------ playing
    def run(self) -> Outcome:
        started = time.time()
        exp = self.exp
        self.store.add_episodes(grid(exp))
        self.levels = self._context_levels()
        episodes = self.store.episodes()
        todo = [e for e in episodes if e.get("status") != "finished"]
        before = [e for e in episodes if e.get("status") == "finished"]
        self._count_before(before, todo)
        if not todo:
            self.display.log("every episode of this run is finished; nothing to play")
            return Outcome(self.run_dir, len(before), len(episodes), None, 0, 0.0)
        self._load_agents()
        if self.providers is None:
            self.providers = build_providers(exp, response_cache_dir(exp))
        if self.pool is None:
            self.pool = EvaluatorPool(executor=make_executor(exp), cache=exp.run.eval_cache)
        self.store.event(
            "resumed" if before or any(e["n_turns"] for e in todo) else "started",
            {"episodes": len(todo), "devices": self.pool.devices, "pid": os.getpid()},
        )
        self._check_budget()  # a cap already reached before this resume: play nothing
        work: queue.Queue[dict[str, Any]] = queue.Queue()
        for e in todo:
            work.put(e)
        threads = [
            threading.Thread(target=self._worker, args=(work,), daemon=True, name=f"episode-{i}")
            for i in range(min(exp.run.concurrency, len(todo)))
        ]
        in_main = threading.current_thread() is threading.main_thread()
        old = {}
        if in_main:
            for sig in (signal.SIGINT, signal.SIGTERM):
                old[sig] = signal.signal(sig, self._on_signal)
        parsing = serialised_parsing() if exp.run.concurrency > 1 else contextlib.nullcontext()
        try:
            with self.display, parsing:
                for t in threads:
                    t.start()
                while any(t.is_alive() for t in threads):
                    for t in threads:
                        t.join(timeout=0.2)
        except KeyboardInterrupt:
            self.store.event("aborted", "second interrupt")
            self.pool.close()
            raise
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)
        executor_stats = self.pool.executor.stats()
        self.pool.close()
        finished = sum(1 for e in self.store.episodes() if e["status"] == "finished")
        self.store.event(
            "stopped" if self.stop_reason else "finished",
            {
                "reason": self.stop_reason,
                "finished": finished,
                "total": len(episodes),
                "executor": executor_stats,
            },
        )
        save_resolved(exp, self.run_dir)
        return Outcome(
            self.run_dir,
            finished,
            len(episodes),
            self.stop_reason,
            self.errors,
            time.time() - started,
            self.pool.evaluations,
            self.pool.cache_hits,
        )

    def _load_agents(self) -> dict[str, Any]:
        """Each agent's loop, imported again where it lives in the user's code (a resume in a new
        process); a module that cannot be imported stops the run here, before any call."""
        agents = {label: self.exp.agent(label) for label in self.exp.agents}
        try:
            return agent_refs.load_all(agents)
        except agent_refs.AgentError as exc:
            raise RunError(str(exc)) from None

    def _count_before(self, before: list[dict[str, Any]], todo: list[dict[str, Any]]) -> None:
        from .metrics import load_episodes

        views = {v.id: v for v in load_episodes(self.store)}
        compiled = correct = faster = timed = 0
        for e in before:
            v = views[e["id"]]
            compiled += v.compiled()
            correct += v.correct()
            s = v.speedup()
            timed += s is not None
            faster += s is not None and s > 1.0
        turns = sum(len(v.turns) for v in views.values())
        calls = accounts.from_store(self.store)
        calls.cache = self.exp.run.cache
        self.display.set(
            total=len(before) + len(todo),
            done=len(before),
            before=len(before),
            compiled=compiled,
            correct=correct,
            faster=faster,
            timed=timed,
            turns=turns,
            accounts=calls,
        )

    def _worker(self, work: queue.Queue[dict[str, Any]]) -> None:
        while not self.stop_event.is_set():
            try:
                episode = work.get_nowait()
            except queue.Empty:
                return
            try:
                self._play(episode)
            except StopRun:
                self.store.set_status(episode["id"], "stopped")
            except Exception as exc:  # noqa: BLE001 - one episode's failure is recorded, the run goes on
                with self.budget_lock:
                    self.errors += 1
                detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                self.store.set_status(episode["id"], "error", detail + "\n" + traceback.format_exc()[-4000:])
                self.display.update(errors=1)
                self.display.log(f"error in {_label(episode)}: {detail}")
                if self.errors >= self.exp.run.max_errors:
                    self.stop(f"{self.errors} episodes ended in an error (run.max_errors)")
            finally:
                if episode.get("_running"):
                    self.display.update(running=-1)

    def _play(self, episode: dict[str, Any]) -> None:
        import warpgym.agents as agents
        from warpgym.agents import EpisodeSettings, TurnRecord
        from warpgym.env import KernelEnv, RewardConfig
        from warpgym.tasks import get_task

        exp = self.exp
        episode_id = episode["id"]
        task = get_task(episode["task"])
        prior = [TurnRecord.from_dict(r) for r in self.store.turn_records(episode_id)]
        self.store.start_episode(episode_id)
        episode["_running"] = True
        self.display.update(running=1)
        assert self.providers is not None and self.pool is not None
        provider = JournalProvider(self.providers[episode["model"]], self.store, episode_id, self)
        env = KernelEnv(
            task,
            target=exp.target,
            device=self.pool.kind,
            max_turns=exp.max_turns,
            timing=exp.run.timing,
            reward=RewardConfig(baseline=exp.metrics.baseline),
            evaluator=PooledEvaluator(self.pool),
        )
        stored = {r.turn for r in prior}

        def on_turn(record: Any) -> None:
            data = record.to_dict() if hasattr(record, "to_dict") else dict(record)
            if data["turn"] in stored:
                return  # a replayed turn: already in the store
            if self.store.add_turn(episode_id, data, exp.metrics.baseline):
                stored.add(data["turn"])
                self.display.update(turns=1)

        agent = exp.agent(episode["agent"])
        settings = EpisodeSettings(
            task=task.id,
            loop=agent.loop,
            context=episode["context"],
            max_turns=exp.max_turns,
            history=agent.history or exp.history,
            sample=episode["sample"],
            target=exp.target,
            device=self.pool.kind,
            context_text=context_levels.text_for(self.levels, episode["context"], task.language),
            loop_args=dict(agent.params),
            agent=episode["agent"],
        )
        resume = prior or None
        result = agents.run_episode(settings, provider=provider, env=env, on_turn=on_turn, resume=resume)
        for record in result.turns:  # a loop that did not report a turn through on_turn still gets it stored
            on_turn(record)
        if self.stop_reason and self.stop_reason.startswith("interrupted"):
            raise StopRun(self.stop_reason)  # a quick exit: the heldout check waits for the resume
        records = self.store.turn_records(episode_id)
        best = best_turn(records, exp.metrics.baseline)
        heldout = None
        if (
            best is not None
            and exp.run.heldout
            and records[best - 1].get("candidate")
            and (records[best - 1].get("result") or {}).get("correct")
        ):
            heldout = self._heldout(task, records[best - 1]["candidate"])
        self.store.finish_episode(episode_id, solved=bool(result.solved), best_turn=best, heldout=heldout)
        self._count_finished(records, best)
        self.display.log(_outcome_line(episode, records, best, heldout, self.display))

    def _heldout(self, task: Task, source: str) -> dict[str, Any]:
        from warpgym.env import EvalOptions

        assert self.pool is not None
        options = EvalOptions(
            target=self.exp.target,
            device=self.pool.kind,
            shape_sets=("heldout",),
            timing=False,
            reveal_shapes=False,
        )
        return self.pool.evaluate(task, source, options).to_dict()

    def _count_finished(self, records: list[dict[str, Any]], best: int | None) -> None:
        cols = [turn_columns(r, self.exp.metrics.baseline) for r in records]
        b = cols[best - 1] if best else None
        speedup = b["speedup"] if b and b["correct"] else None
        self.display.update(
            done=1,
            compiled=int(any(c["compiled"] for c in cols)),
            correct=int(any(c["correct"] for c in cols)),
            timed=int(speedup is not None),
            faster=int(speedup is not None and speedup > 1.0),
        )


def best_turn(records: list[dict[str, Any]], baseline: str) -> int | None:
    """The stored episode's best turn (``warpgym.agents.best``), or its last when none was correct, as
    the ``best_turn`` column of the store holds it."""
    outcomes = [(bool(c["correct"]), c["speedup"]) for c in (turn_columns(r, baseline) for r in records)]
    i = best_index(outcomes, else_last=True)
    return None if i is None else records[i]["turn"]


def _label(e: dict[str, Any]) -> str:
    return f"{e['task']} [{e['agent']}, {e['model']}, context={e['context']}, sample {e['sample']}]"


def _outcome_line(
    e: dict[str, Any],
    records: list[dict[str, Any]],
    best: int | None,
    heldout: dict[str, Any] | None,
    display: Display,
) -> str:
    marks = []
    for r in records:
        res = r.get("result") or {}
        if res.get("correct"):
            marks.append("correct")
        elif res.get("compiled"):
            marks.append("wrong")
        elif r.get("candidate") is None:
            marks.append("no code")
        else:
            marks.append(f"failed at {res.get('stage', '?')}")
    held = ""
    if heldout is not None:
        held = "; heldout " + ("correct" if heldout.get("correct") else "WRONG")
    c = display.c
    return f"[{c.done}/{c.total}] {_label(e)}: " + " -> ".join(marks) + held


def run_experiment(
    exp: Experiment | None,
    *,
    run_dir: Path,
    display: Display | None = None,
    providers: dict[str, Any] | None = None,
) -> Outcome:
    """Start or resume the run in ``run_dir`` and play it to the end (or a clean stop)."""
    exp, store, _ = open_run(exp, run_dir)
    try:
        save_resolved(exp, run_dir)
        runner = Runner(
            exp, run_dir, store, display=display or Display(exp.name, quiet=True), providers=providers
        )
        return runner.run()
    finally:
        store.close()


__all__ = ["Outcome", "Runner", "StopRun", "best_turn", "grid", "run_experiment"]
