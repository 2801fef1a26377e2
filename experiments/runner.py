"""Play an experiment's grid: concurrent episodes, a pool of evaluators, every step stored.

Threads play episodes (``run.concurrency`` at once, so that many model calls are in flight);
evaluations go to an executor (``executors.py``): ``Evaluator``s on this host (one per GPU, or a
few on the CPU), or Ray actors on a cluster; each evaluates one candidate at a time.
Everything is committed to the run's SQLite store as it happens:

- a model's answer, the moment it arrives (the ``calls`` journal);
- a turn, the moment the agent finishes it (``on_turn``);
- an episode's end, with its best turn and heldout verdict.

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

import ast
import hashlib
import json
import os
import queue
import shutil
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from . import config as config_mod
from .config import ConfigError, Experiment
from .executors import Executor, ExecutorError, LocalExecutor, RayExecutor
from .progress import Display
from .store import Store, turn_columns


class RunError(Exception):
    """A run that cannot start or resume (bad run directory, changed grid, missing API key)."""


class StopRun(BaseException):  # noqa: N818 - a signal, not an error; BaseException so loops never swallow it
    """Raised inside an episode to stop it cleanly (budget reached, Ctrl-C)."""


STORE_NAME = "store.sqlite"
_AST_LOCK = threading.RLock()


def serialise_ast_parse() -> None:
    """Make ``ast.parse`` safe to call from several threads at once.

    Before Python 3.13, turning a parse tree into ``ast`` objects uses a recursion counter shared by
    all threads (CPython gh-106905); two threads parsing at once can fail with "SystemError: AST
    constructor recursion depth mismatch". Episodes run in threads, and both the agents (extracting
    the code from an answer) and the evaluator (static checks) parse, so parsing is serialised here.
    It takes milliseconds; the model calls and evaluations stay concurrent.
    """
    if sys.version_info >= (3, 13) or getattr(ast.parse, "_warpgym_serialised", False):
        return
    original = ast.parse

    def parse(*args: Any, **kwargs: Any) -> Any:
        with _AST_LOCK:
            return original(*args, **kwargs)

    parse._warpgym_serialised = True  # type: ignore[attr-defined]
    parse.__doc__ = original.__doc__
    ast.parse = parse


# --------------------------------------------------------------------------- run directories
def new_run_dir(exp: Experiment, root: Path) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = root / f"{exp.name}-{stamp}"
    n = 1
    while path.exists():
        n += 1
        path = root / f"{exp.name}-{stamp}-{n}"
    return path


def find_run(run: str | Path, root: Path | None = None) -> Path:
    """A run directory by path, or by name under ``root`` (default ``runs/``)."""
    path = Path(run)
    if (path / STORE_NAME).is_file():
        return path
    if path.name == STORE_NAME and path.is_file():
        return path.parent
    if root is not None and (root / run / STORE_NAME).is_file():
        return root / run
    raise RunError(f"no run at {run} (a run directory holds {STORE_NAME})")


def open_run(exp: Experiment | None, run_dir: Path) -> tuple[Experiment, Store, bool]:
    """Create the run directory or reopen it; returns (experiment, store, resumed).

    On resume the stored experiment is authoritative for the grid; the given one may change
    only ``run`` and ``budget`` (and must otherwise match, so a resumed run means one thing).
    """
    store_path = run_dir / STORE_NAME
    if store_path.is_file():
        store = Store(store_path)
        stored = store.get_meta("config")
        if stored is None:
            raise RunError(f"{store_path} holds no experiment; not a warpgym run")
        saved = config_mod.from_resolved(stored)
        if exp is not None:
            a, b = saved.identity(), exp.identity()
            changed = [k for k in a if a[k] != b[k]]
            if changed:
                store.close()
                raise RunError(
                    f"{run_dir} was started with a different experiment ({', '.join(changed)} "
                    "differ); resume it with its own config (omit CONFIG) or start a new run"
                )
            saved.run, saved.budget = exp.run, exp.budget
        return saved, store, True
    if exp is None:
        raise RunError(f"no run at {run_dir}; give an experiment file to start one")
    run_dir.mkdir(parents=True, exist_ok=True)
    if exp.source_path:
        shutil.copyfile(exp.source_path, run_dir / "config.toml")
    store = Store(store_path)
    from warpgym import __version__

    store.set_meta("config", exp.model_dump())
    store.set_meta("versions", _versions(__version__))
    store.set_meta("created", time.time())
    return exp, store, False


def _versions(warpgym_version: str) -> dict[str, str]:
    import platform

    import torch
    import triton

    return {
        "warpgym": warpgym_version,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
    }


def save_resolved(exp: Experiment, run_dir: Path) -> None:
    (run_dir / "config.resolved.json").write_text(exp.to_json() + "\n")


# --------------------------------------------------------------------------- evaluation pool
def resolve_devices(exp: Experiment) -> list[str]:
    """One entry per local evaluation worker: each GPU ``workers_per_gpu`` times (interleaved, so work
    spreads over the GPUs first), or ``workers`` CPU entries. Empty for the Ray executor, whose
    cluster decides (checked when it starts)."""
    import torch

    if exp.run.executor == "ray":
        return []
    devices = exp.run.devices
    per_gpu = exp.run.workers_per_gpu
    cpu_workers = exp.run.workers or max(1, min(4, (os.cpu_count() or 2) // 2))
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if devices == "auto":
        devices = "cuda" if gpus else "cpu"
    if devices == "cpu":
        return ["cpu"] * cpu_workers
    if devices == "cuda":
        if not gpus:
            raise RunError('devices = "cuda" but no CUDA GPU is visible here; use "cpu" or "auto"')
        return [f"cuda:{i}" for _ in range(per_gpu) for i in range(gpus)]
    assert isinstance(devices, list)
    for d in devices:
        if d.startswith("cuda") and (not gpus or (":" in d and int(d.split(":")[1]) >= gpus)):
            raise RunError(f"device {d} is not visible here ({gpus} GPUs)")
    listed = ["cpu" if d == "auto" else d for d in devices]
    return [d for _ in range(per_gpu) for d in listed if d.startswith("cuda")] + [
        d for d in listed if not d.startswith("cuda")
    ]


def make_executor(exp: Experiment) -> Executor:
    """The run's executor (``run.executor``): evaluators on this host, or Ray actors on a cluster."""
    run = exp.run
    try:
        if run.executor == "ray":
            return RayExecutor(
                address=run.ray_address,
                devices=run.devices,
                workers=run.workers,
                workers_per_gpu=run.workers_per_gpu,
            )
        return LocalExecutor(resolve_devices(exp))
    except ExecutorError as exc:
        raise RunError(str(exc)) from None


class EvaluatorPool:
    """Verdicts from an executor (see ``make_executor``), with a per-run cache of verdicts by source."""

    def __init__(
        self, devices: list[str] | None = None, *, cache: bool = True, executor: Executor | None = None
    ) -> None:
        self.executor = executor or LocalExecutor(devices or ["cpu"])
        self.devices = self.executor.slots
        self.kind = self.executor.kind
        self.use_cache = cache
        self.cache: dict[str, Any] = {}
        self.cache_lock = threading.Lock()
        self.key_locks: dict[str, threading.Lock] = {}
        self.evaluations = 0
        self.cache_hits = 0

    def evaluate(self, task: Any, source: Any, options: Any) -> Any:
        """The verdict on ``source`` (a module's source or a ``Candidate``): its attachments are part of
        the cache key, since the module may read them."""
        from warpgym.env.candidate import Candidate

        key = hashlib.sha256(
            json.dumps(
                [
                    task.id,
                    Candidate.of(source).to_dict(),
                    options.target,
                    list(options.shape_sets),
                    options.timing,
                    options.reveal_shapes,
                ]
            ).encode()
        ).hexdigest()
        if not self.use_cache:
            return self._evaluate(task, source, options)
        with self.cache_lock:
            lock = self.key_locks.setdefault(key, threading.Lock())
        with lock:  # the same source asked twice at once is judged once
            with self.cache_lock:
                if key in self.cache:
                    self.cache_hits += 1
                    return _copy_result(self.cache[key])
            result = self._evaluate(task, source, options)
            with self.cache_lock:
                self.cache[key] = result
            return _copy_result(result)

    def _evaluate(self, task: Any, source: str, options: Any) -> Any:
        self.evaluations += 1
        return self.executor.evaluate(task, source, options)

    def close(self) -> None:
        self.executor.close()


def _copy_result(result: Any) -> Any:
    from warpgym.env import EvalResult

    return EvalResult.from_dict(result.to_dict())


class PooledEvaluator:
    """What a ``KernelEnv`` sees as its evaluator: borrows one from the pool per evaluation."""

    def __init__(self, pool: EvaluatorPool) -> None:
        self.pool = pool
        self.device = pool.kind

    def evaluate(self, task: Any, source: str, options: Any = None) -> Any:
        from warpgym.env import EvalOptions

        return self.pool.evaluate(task, source, options or EvalOptions())

    def close(self) -> None:
        """The pool outlives the episode; nothing to close here."""


# --------------------------------------------------------------------------- providers
class JournalProvider:
    """Wraps a provider for one episode: answers are journaled in the store as they arrive and
    re-used when the same request comes again (a resumed episode); no call starts once the run
    is stopping."""

    def __init__(self, inner: Any, runner: Runner, episode_id: int) -> None:
        self.inner = inner
        self.runner = runner
        self.episode_id = episode_id
        self.name = getattr(inner, "name", "")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @staticmethod
    def key(messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
        blob = json.dumps({"messages": messages, "params": params}, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _before(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> tuple[str, Any]:
        from warpgym.agents import Completion

        key = self.key(messages, params)
        hit = self.runner.store.find_call(self.episode_id, key)
        if hit is not None:
            completion = Completion.from_dict(hit)
            completion.cached = True  # paid once, by the session that journaled it
            self.runner.display.update(cached_calls=1)
            return key, completion
        self.runner.check_stop()
        return key, None

    def _after(self, key: str, metadata: dict[str, Any] | None, completion: Any) -> Any:
        self.runner.store.add_call(
            self.episode_id, key, (metadata or {}).get("turn"), metadata, completion.to_dict()
        )
        self.runner.charge(completion)
        return completion

    def complete(
        self, messages: list[dict[str, Any]], *, metadata: dict[str, Any] | None = None, **params: Any
    ) -> Any:
        key, hit = self._before(messages, params)
        if hit is not None:
            return hit
        return self._after(key, metadata, self.inner.complete(messages, metadata=metadata, **params))

    async def acomplete(
        self, messages: list[dict[str, Any]], *, metadata: dict[str, Any] | None = None, **params: Any
    ) -> Any:
        key, hit = self._before(messages, params)
        if hit is not None:
            return hit
        return self._after(key, metadata, await self.inner.acomplete(messages, metadata=metadata, **params))


def response_cache_dir(exp: Experiment) -> Path | None:
    """The configured response cache, or None for the agents' shared one."""
    return Path(exp.run.cache_dir) if exp.run.cache_dir else None


def build_providers(exp: Experiment, cache_dir: Path | None) -> dict[str, Any]:
    """One provider per model, built before any work starts (a missing key fails here)."""
    import warpgym.agents as agents

    providers = {}
    for i, model in enumerate(exp.models):
        try:
            providers[model.label] = agents.make_provider(
                model.spec, cache_dir=cache_dir, use_cache=exp.run.cache, prices=model.prices, **model.params
            )
        except agents.ProviderConfigError as exc:
            raise RunError(_model_where(exp, i) + f"model {model.label!r}: {exc}") from None
    return providers


def _model_where(exp: Experiment, index: int) -> str:
    if not exp.source_path or not Path(exp.source_path).is_file():
        return ""
    line = config_mod.locate(Path(exp.source_path).read_text(), ("models", index, "spec"))
    return f"{exp.source_path}, line {line}: " if line else f"{exp.source_path}: "


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
        providers: dict[str, Any] | None = None,
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

    def charge(self, completion: Any) -> None:
        tokens = int(completion.input_tokens or 0) + int(completion.output_tokens or 0)
        with self.budget_lock:
            if not completion.cached:
                self.spent_tokens += tokens
                self.spent_cost += float(completion.cost_usd or 0.0)
            self._check_budget()
        self.display.update(calls=1, cached_calls=int(bool(completion.cached)))

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._interrupts += 1
        if self._interrupts == 1:
            self.stop("interrupted", " (Ctrl-C again to quit at once)")
        else:
            raise KeyboardInterrupt

    # ------------------------------------------------------------------ playing
    def run(self) -> Outcome:
        started = time.time()
        exp = self.exp
        if exp.run.concurrency > 1:
            serialise_ast_parse()
        self.store.add_episodes(grid(exp))
        episodes = self.store.episodes()
        todo = [e for e in episodes if e.get("status") != "finished"]
        before = [e for e in episodes if e.get("status") == "finished"]
        self._count_before(before, todo)
        if not todo:
            self.display.log("every episode of this run is finished; nothing to play")
            return Outcome(self.run_dir, len(before), len(episodes), None, 0, 0.0)
        if self.providers is None:
            self.providers = build_providers(exp, response_cache_dir(exp))
        if self.pool is None:
            self.pool = EvaluatorPool(executor=make_executor(exp), cache=exp.run.eval_cache)
        self.store.event(
            "resumed" if before or any(e["n_turns"] for e in todo) else "started",
            {"episodes": len(todo), "devices": self.pool.devices, "pid": os.getpid()},
        )
        self._check_budget()  # a cap already reached in an earlier session: play nothing
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
        try:
            with self.display:
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
        tokens = sum(v.tokens() for v in views.values())
        cost = sum(v.cost() for v in views.values())
        self.display.set(
            total=len(before) + len(todo),
            done=len(before),
            before=len(before),
            compiled=compiled,
            correct=correct,
            faster=faster,
            timed=timed,
            turns=turns,
            tokens=tokens,
            cost_usd=cost,
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
        from warpgym.agents import TurnRecord
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
        provider = JournalProvider(self.providers[episode["model"]], self, episode_id)
        env = KernelEnv(
            task,
            target=exp.target,
            device=self.pool.kind,
            max_turns=exp.max_turns,
            timing=exp.run.timing,
            reward=RewardConfig(baseline=exp.metrics.baseline),
            evaluator=PooledEvaluator(self.pool),
        )  # type: ignore[arg-type]
        stored = {r.turn for r in prior}

        def on_turn(record: Any) -> None:
            data = record.to_dict() if hasattr(record, "to_dict") else dict(record)
            if data["turn"] in stored:
                return  # a replayed turn: already in the store
            if self.store.add_turn(episode_id, data, exp.metrics.baseline):
                stored.add(data["turn"])
                self.display.update(
                    turns=1,
                    tokens=int(data.get("input_tokens") or 0) + int(data.get("output_tokens") or 0),
                    cost_usd=float(data.get("cost_usd") or 0),
                )

        result = agents.run_episode(
            task.id,
            loop=episode["agent"],
            provider=provider,
            context=episode["context"],
            max_turns=exp.max_turns,
            env=env,
            history=exp.history,
            sample=episode["sample"],
            on_turn=on_turn,
            resume=prior or None,
            target=exp.target,
            device=self.pool.kind,
        )
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

    def _heldout(self, task: Any, source: str) -> dict[str, Any]:
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
    """The metrics' rule (see ``metrics``): best correct speedup, earliest on ties; else the last turn."""
    if not records:
        return None
    cols = [(r["turn"], turn_columns(r, baseline)) for r in records]
    correct = [(t, c) for t, c in cols if c["correct"]]
    if not correct:
        return cols[-1][0]
    return max(
        correct, key=lambda tc: (tc[1]["speedup"] if tc[1]["speedup"] is not None else float("-inf"), -tc[0])
    )[0]


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


__all__ = [
    "ConfigError",
    "EvaluatorPool",
    "Outcome",
    "RunError",
    "Runner",
    "StopRun",
    "best_turn",
    "find_run",
    "grid",
    "make_executor",
    "new_run_dir",
    "open_run",
    "resolve_devices",
    "run_experiment",
]
