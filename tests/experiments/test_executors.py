"""Executors: the runner gives the same stored verdicts on Ray actors as on local evaluators, and an
actor killed mid-evaluation is replaced with its evaluation retried, no turn lost or stored twice.

The Ray tests use one local Ray instance (2 CPUs) and one CPU actor for the whole module, and a
single episode of the quick start's recordings (normalization/softmax, sample 0: a PyTorch op in
host code, then an overflowing kernel, then a right one): three verdicts of three kinds. They
skip only where Ray is not installed (``pip install 'warpgym[ray]'``).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from warpgym.experiments import config, devices, executors, pool, rundir, runner
from warpgym.experiments.store import Store

RECORDINGS = Path(config.__file__).parent / "recordings" / "quickstart.jsonl"
HAS_RAY = importlib.util.find_spec("ray") is not None
needs_ray = pytest.mark.skipif(not HAS_RAY, reason="Ray is not installed (pip install 'warpgym[ray]')")

EXPERIMENT = f"""
name = "executors"
tasks = ["normalization/softmax"]
agents = ["fix-retry"]
models = [{{ spec = "replay:{RECORDINGS}", name = "quickstart" }}]
samples = 1
max_turns = 3

[run]
devices = "cpu"
workers = 1
concurrency = 1
heldout = false
{{extra}}
[metrics]
pass_k = [1]
"""


def _experiment(extra: str = "") -> config.Experiment:
    return config.parse(EXPERIMENT.replace("{extra}", extra), where="exp.toml")


def _play(exp: config.Experiment, run_dir: Path, executor: Any) -> runner.Outcome:
    exp, store, _ = rundir.open_run(exp, run_dir)
    try:
        evaluators = pool.EvaluatorPool(executor=executor, cache=exp.run.eval_cache)
        return runner.Runner(exp, run_dir, store, pool=evaluators).run()
    finally:
        store.close()


def _judged(result: dict[str, Any]) -> dict[str, Any]:
    """A verdict less what differs between two evaluations of one candidate: timings, sandbox paths, and which
    cases failed by how much (each evaluation draws its inputs from its own secret root), with the text, and
    what the candidate printed (a warning on some inputs only, and Python warns once per worker process)."""
    kept = {k: v for k, v in result.items()
            if k not in ("sandbox", "seconds", "input_seed", "feedback", "stdout")}
    kept["cases"] = sorted({c.get("shape_set") for c in result.get("cases") or []})  # which ones ran; a wrong
    kept["errors"] = sorted(result.get("errors") or {})  # kernel may fail other cases on other inputs
    return kept


def _same_verdicts(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> None:
    assert [g[:4] for g in got] == [w[:4] for w in want]
    for g, w in zip(got, want, strict=True):
        keys = g[4].keys() | w[4].keys()
        differ = {k: (g[4].get(k), w[4].get(k)) for k in keys if g[4].get(k) != w[4].get(k)}
        assert not differ, (g[:4], differ)


def _verdicts(run_dir: Path) -> list[tuple[Any, ...]]:
    """Each stored turn: its episode, number, phase and verdict (``_judged``)."""
    rows = []
    with Store(run_dir / "store.sqlite", readonly=True) as store:
        assert all(e["status"] == "finished" for e in store.episodes())
        for e in store.episodes():
            for r in store.turn_records(e["id"]):
                result = _judged(r["result"] or {})
                rows.append((e["task"], e["sample"], r["turn"], r["phase"], result))
        assert len(store.turns()) == len(rows)
    return rows


class Shared:
    """An executor lent to one run: the runner's ``close`` leaves it open for the next test."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.slots = inner.slots

    def evaluate(self, task: Any, source: str, options: Any) -> Any:
        return self.inner.evaluate(task, source, options)

    def stats(self) -> dict[str, Any]:
        return self.inner.stats()

    def close(self) -> None:
        """The module's fixture closes the real one."""


# --------------------------------------------------------------------------- no Ray needed
def test_executor_settings_are_checked_with_line_and_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "ray_available", lambda: False)
    with pytest.raises(config.ConfigError) as err:
        _experiment('executor = "ray"\n')
    expected = "exp.toml, line 14: run.executor: Ray is not installed; pip install 'warpgym[ray]'"
    assert expected in str(err.value)
    monkeypatch.setattr(config, "ray_available", lambda: True)
    text = EXPERIMENT.replace('devices = "cpu"', 'devices = ["cuda:0"]')
    text = text.replace("{extra}", 'executor = "ray"\n')
    with pytest.raises(config.ConfigError, match=r"line 10: run.devices: a list of devices is for the local"):
        config.parse(text, where="exp.toml")
    with pytest.raises(config.ConfigError, match=r"run.ray_address: is only used with executor = \"ray\""):
        _experiment('ray_address = "auto"\n')
    with pytest.raises(config.ConfigError, match=r"run.executor: Input should be 'local' or 'ray'"):
        _experiment('executor = "slurm"\n')
    exp = _experiment('executor = "ray"\nray_address = "ray://head:10001"\nworkers_per_gpu = 2\n')
    assert (exp.run.executor, exp.run.ray_address, exp.run.workers_per_gpu) == ("ray", "ray://head:10001", 2)
    assert devices.resolve_devices(exp) == []  # the cluster decides, when the executor starts
    assert _experiment().run.executor == "local"


def test_workers_per_gpu_repeats_each_gpu_interleaved(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    exp = _experiment("workers_per_gpu = 2\n")
    exp.run.devices = "auto"
    assert devices.resolve_devices(exp) == ["cuda:0", "cuda:1", "cuda:0", "cuda:1"]
    exp.run.devices = ["cuda:1"]
    assert devices.resolve_devices(exp) == ["cuda:1", "cuda:1"]
    exp.run.devices = "cpu"  # workers_per_gpu is about GPUs; the CPU takes run.workers
    assert devices.resolve_devices(exp) == ["cpu"]


def test_local_executor_pins_each_evaluator_to_its_gpu_and_lends_it_to_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    current: dict[int, str] = {}

    class Fake:
        def __init__(self, device: str) -> None:
            self.device = device
            self.busy = False
            self.seen: list[tuple[str, str]] = []

        def evaluate(self, task: Any, source: str, options: Any) -> str:
            assert not self.busy, "two evaluations at once on one evaluator"
            self.busy = True
            self.seen.append((current[threading.get_ident()], source))
            time.sleep(0.05)
            self.busy = False
            return self.device

        def close(self) -> None:
            pass

    class Pin:
        def __init__(self, device: str) -> None:
            self.device = device

        def __enter__(self) -> None:
            current[threading.get_ident()] = self.device

        def __exit__(self, *exc: object) -> None:
            current.pop(threading.get_ident())

    monkeypatch.setattr(executors, "current_gpu", Pin)
    ex = executors.LocalExecutor(["cuda:0", "cuda:1", "cuda:0", "cuda:1"], factory=Fake)
    assert ex.kind == "cuda" and ex.slots == ["cuda:0", "cuda:1", "cuda:0", "cuda:1"]
    futures = [ex.submit("math/add", f"source {i}", None) for i in range(16)]
    used = [f.result() for f in futures]
    ex.close()
    assert sorted(set(used)) == ["cuda:0", "cuda:1"]
    for device, evaluator in ex.evaluators:
        assert evaluator.seen and all(pinned == device for pinned, _ in evaluator.seen)
    judged = sorted(source for _, ev in ex.evaluators for _, source in ev.seen)
    assert judged == sorted(f"source {i}" for i in range(16))
    assert ex.stats()["evaluations"] == 16


# --------------------------------------------------------------------------- Ray on the CPU
@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Any, ...]]:
    """The reference: the experiment played by the local executor."""
    run_dir = tmp_path_factory.mktemp("local") / "run"
    exp = _experiment()
    _play(exp, run_dir, pool.make_executor(exp))
    verdicts = _verdicts(run_dir)
    assert [(v[2], v[4]["stage"], bool(v[4]["correct"])) for v in verdicts] == [
        (1, "static", False),
        (2, "correctness", False),
        (3, "done", True),
    ]
    return verdicts


@pytest.fixture(scope="module")
def ray_executor() -> Any:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        ex = executors.RayExecutor(devices="cpu", workers=1)
        assert not ex.owns_ray and ex.kind == "cpu" and len(ex.slots) == 1
        yield ex
        ex.close()
    finally:
        ray.shutdown()


@needs_ray
@pytest.mark.slow  # ~15 s Ray start, then one cold evaluation worker per executor
def test_ray_actors_store_the_same_verdicts_as_local_evaluators(
    tmp_path: Path, local_run: list[tuple[Any, ...]], ray_executor: Any
) -> None:
    exp = _experiment('executor = "ray"\n')
    outcome = _play(exp, tmp_path / "run", Shared(ray_executor))
    assert (outcome.finished, outcome.total, outcome.errors) == (1, 1, 0)
    _same_verdicts(_verdicts(tmp_path / "run"), local_run)
    with Store(tmp_path / "run" / "store.sqlite", readonly=True) as store:
        assert store.events()[0]["detail"]["devices"][0].startswith("ray:")
        assert store.events()[-1]["detail"]["executor"]["executor"] == "RayExecutor"


@needs_ray
@pytest.mark.slow
def test_an_actor_killed_mid_evaluation_is_replaced_and_the_step_retried(
    tmp_path: Path, local_run: list[tuple[Any, ...]], ray_executor: Any
) -> None:
    import ray

    killed: list[Any] = []
    first_pid = next(iter(ray_executor.current.values())).info["pid"]

    def kill_if_still_running(slot: Any, ref: Any) -> None:
        time.sleep(0.3)  # past the static check's verdict; far inside an interpreted check's
        if not killed and not ray.wait([ref], timeout=0)[0]:
            killed.append((slot.info["pid"], ref))
            os.kill(slot.info["pid"], signal.SIGKILL)

    def on_dispatch(slot: Any, ref: Any) -> None:
        if not killed:
            threading.Thread(target=kill_if_still_running, args=(slot, ref), daemon=True).start()

    lost, replaced = ray_executor.lost, ray_executor.replaced
    ray_executor.on_dispatch = on_dispatch
    try:
        outcome = _play(_experiment('executor = "ray"\n'), tmp_path / "run", Shared(ray_executor))
    finally:
        ray_executor.on_dispatch = None
    assert (outcome.finished, outcome.errors) == (1, 0)
    assert len(killed) == 1 and killed[0][0] == first_pid
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(killed[0][1])  # the evaluation in flight when the actor died never came back...
    assert (ray_executor.lost - lost, ray_executor.replaced - replaced) == (1, 1)
    (slot,) = ray_executor.current.values()
    assert slot.generation >= 1 and slot.info["pid"] != first_pid
    # ...yet every turn is stored, once, as judged locally
    _same_verdicts(_verdicts(tmp_path / "run"), local_run)
    with Store(tmp_path / "run" / "store.sqlite", readonly=True) as store:
        assert len(store.calls()) == 3  # one model call per turn: the retry asked the model nothing


# --------------------------------------------------------------------------- imported suites
FIXTURES = Path(__file__).parents[1] / "fixtures" / "kernelbench"
IMPORTED = "kernelbench/level1/1_Scale_rows"


def _summary(result: Any) -> tuple[Any, ...]:
    """What must agree between two places that judged one candidate (not seconds or sandbox paths)."""
    return (result.task, result.stage, result.compiled, result.correct, result.mode,
            sorted(v.code for v in result.violations), [(c.shape_set, c.passed) for c in result.cases])


def test_the_runner_gives_ray_actors_the_suites_its_tasks_come_from(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[dict[str, Any]] = []
    monkeypatch.setattr(pool, "RayExecutor", lambda **kwargs: made.append(kwargs))
    exp = _experiment('executor = "ray"\n')
    pool.make_executor(exp)
    exp.suites = {"kernelbench": str(FIXTURES.resolve())}
    pool.make_executor(exp)
    # {} rather than None: actors of a run without imported tasks import nothing, whatever else is imported
    assert [m["suites"] for m in made] == [{}, {"kernelbench": str(FIXTURES.resolve())}]


@needs_ray
@pytest.mark.slow
def test_an_imported_task_gets_the_same_verdict_on_a_ray_actor_as_locally(
    ray_executor: Any, cpu_evaluator: Any
) -> None:
    from warpgym.env import EvalOptions
    from warpgym.tasks import get_task
    from warpgym.tasks.importers import use

    use({"kernelbench": str(FIXTURES)})
    options = EvalOptions(device="cpu", shape_sets=("dev",))
    names = ("scale_rows_ok.py", "scale_rows_off_by_one.py")
    sources = [(FIXTURES / "candidates" / name).read_text() for name in names]
    ex = executors.RayExecutor(devices="cpu", workers=1)  # the suites imported here, by default
    try:
        assert ex.suites == {"kernelbench": str(FIXTURES.resolve())}
        remote = [ex.evaluate(IMPORTED, source, options) for source in sources]
    finally:
        ex.close()
    here = [cpu_evaluator.evaluate(get_task(IMPORTED), source, options) for source in sources]
    assert [r.correct for r in remote] == [True, False], remote[0].feedback
    assert [_summary(r) for r in remote] == [_summary(r) for r in here]


@needs_ray
@pytest.mark.slow
def test_an_actor_that_cannot_import_a_suite_fails_to_start_naming_its_path(
    tmp_path: Path, ray_executor: Any
) -> None:
    gone = tmp_path / "KernelBench"
    with pytest.raises(executors.ExecutorError) as err:
        executors.RayExecutor(devices="cpu", workers=1, suites={"kernelbench": str(gone)})
    message = str(err.value)
    assert message.startswith("no evaluation actor could import the run's suites")
    assert f"kernelbench suite at {gone} could not be imported" in message
    assert "no such file or folder" in message and "unknown task" not in message
    assert len(ray_executor.slots) == 1  # the other executor's actor is untouched


class _FlakyRay:
    """Ray's calls as the executor makes them, where the first result fails the way a message that did not
    cross intact fails (seen once on CI: the actor could not deserialize an argument)."""

    def __init__(self, failures: list[BaseException]) -> None:
        import ray

        self.exceptions = ray.exceptions
        self.failures = failures
        self.sent: list[int] = []

    def get(self, ref: Any) -> Any:
        self.sent.append(ref)
        if self.failures:
            raise self.failures.pop(0)
        from warpgym.env import EvalResult

        done = EvalResult(task="math/add", target="sm_90a", device="cpu", compiled=True, correct=True)
        return done.to_dict()


def _executor_over(fake: _FlakyRay) -> Any:
    """A RayExecutor whose actors are handles that say who was sent a call; a lost one is swapped at once."""
    import queue as queue_

    class Handle:
        def __init__(self, index: int) -> None:
            self.evaluate = type("Remote", (), {"remote": staticmethod(lambda *args: index)})

    ex = object.__new__(executors.RayExecutor)
    executors.Executor.__init__(ex)
    ex.ray, ex.retries, ex.on_dispatch, ex.lost = fake, 3, None, 0
    ex.lock, ex.free, ex.pending = threading.Lock(), queue_.Queue(), 0
    ex.free.put(executors.Slot(0, Handle(0)))
    ex.current = {0: ex.free.queue[0]}

    def on_lost(slot: Any) -> None:
        ex.lost += 1
        fresh = executors.Slot(slot.index, Handle(slot.generation + 1), slot.generation + 1)
        ex.current[slot.index] = fresh
        ex.free.put(fresh)

    ex._on_lost = on_lost
    return ex


@needs_ray
def test_a_ray_system_error_is_retried_on_a_fresh_actor_and_an_evaluation_error_is_not() -> None:
    import ray
    from warpgym.env import EvalOptions

    e = ray.exceptions
    garbled = e.RayTaskError("EvalActor.evaluate", "", e.RaySystemError("Unpack failed: incomplete input"))
    fake = _FlakyRay([garbled.as_instanceof_cause()])
    ex = _executor_over(fake)
    result = ex.evaluate("math/add", "source", EvalOptions(device="cpu"))
    assert result.correct is True
    assert (fake.sent, ex.lost) == ([0, 1], 1)  # the second attempt went to the replacement

    own = e.RayTaskError("EvalActor.evaluate", "", ValueError("the evaluation's own")).as_instanceof_cause()
    fake = _FlakyRay([own])
    ex = _executor_over(fake)
    with pytest.raises(ValueError):
        ex.evaluate("math/add", "source", EvalOptions(device="cpu"))
    assert (fake.sent, ex.lost) == ([0], 0)

    fake = _FlakyRay([garbled.as_instanceof_cause() for _ in range(3)])
    with pytest.raises(executors.ExecutorError, match="lost its worker 3 times: .*RaySystemError"):
        _executor_over(fake).evaluate("math/add", "source", EvalOptions(device="cpu"))


@needs_ray
def test_an_actor_judges_only_the_task_the_driver_named_by_its_fingerprint() -> None:
    """A node with another version of warpgym or of a suite finds a task of the same id that judges other
    shapes or tolerances: it refuses, rather than return that task's verdict as the driver's."""
    from warpgym.env import EvalOptions, EvalResult
    from warpgym.tasks import get_task
    from warpgym.tasks.fingerprint import task_fingerprint

    judged: list[str] = []

    class Evaluator:
        def evaluate(self, task: Any, candidate: str, options: Any) -> EvalResult:
            judged.append(task.id)
            return EvalResult(task=task.id, target="sm_90a", device="cpu", compiled=True, correct=True)

    actor = object.__new__(executors.EvalActor)
    actor.evaluator, actor.suites, actor.registered, actor.suites_error = Evaluator(), {}, True, None
    options = EvalOptions(device="cpu")
    with pytest.raises(executors.ExecutorError, match="math/add on .* is not the driver's task"):
        actor.evaluate("math/add", "source", options, task_fingerprint(get_task("math/mul")))
    assert judged == []
    assert actor.evaluate("math/add", "source", options, task_fingerprint(get_task("math/add")))["correct"]
    assert judged == ["math/add"]

    sent: list[tuple[Any, ...]] = []
    fake = _FlakyRay([])
    ex = _executor_over(fake)
    ex.free.queue[0].handle.evaluate = type("Remote", (), {"remote": staticmethod(lambda *a: sent.append(a))})
    ex.evaluate("math/add", "source", options)
    assert sent[0][0] == "math/add" and sent[0][3] == task_fingerprint(get_task("math/add"))
