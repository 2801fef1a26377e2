"""Experiment files: TOML, validated strictly, with errors that name the line and the field.

An experiment is the grid task x agent x model x context x sample. Everything that changes
what an episode *is* (tasks, agents, models, contexts, turns, target, history) is fixed for
the life of a run; the ``[run]`` and ``[budget]`` tables may change when a run is resumed
(more workers, a higher cap), since they change how the grid is played, not what it holds.

``tomllib`` reports no line numbers for valid TOML, so ``locate`` finds a key's line in the
text itself: good enough for the shapes an experiment file takes (tables, arrays of tables,
dotted keys, inline tables, multi-line arrays).
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from warpgym.env.toolchain import targets

from . import agent_refs
from . import context_levels as levels_mod
from .agent_refs import ResolvedAgent
from .context_levels import Ablation, Level, LevelSpec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PROVIDER_KINDS = ("openai", "anthropic", "openai-compatible", "replay")
CACHE_MODES = ("auto", "read-write", "read-only", "off")
DEFAULT_HISTORY = ("full", "last")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ConfigError(ValueError):
    """An experiment file that cannot be run; the message names the file, line and field."""


def known_history_modes() -> tuple[str, ...]:
    try:
        from warpgym.agents import HISTORY_MODES
    except Exception:  # noqa: BLE001
        return DEFAULT_HISTORY
    return tuple(HISTORY_MODES)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelEntry(Strict):
    """One model: a provider spec, a short label for tables, call parameters, prices."""

    spec: str
    name: str | None = None
    """The label in reports and the store (defaults to the spec)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Passed to ``make_provider``: temperature, max_tokens, reasoning_effort, thinking_budget, timeout..."""
    prices: dict[str, Any] | None = None
    """Overrides the agents' price table for this model (USD per million tokens)."""

    @property
    def label(self) -> str:
        return self.name or self.spec

    @field_validator("spec")
    @classmethod
    def _spec(cls, spec: str) -> str:
        kind, sep, rest = spec.partition(":")
        if not sep or kind not in PROVIDER_KINDS:
            raise ValueError(
                f"unknown provider in {spec!r}; use one of " + ", ".join(f"{k}:..." for k in PROVIDER_KINDS)
            )
        if not rest.strip():
            raise ValueError(f"{spec!r} names no model (write {kind}:MODEL)")
        if kind == "openai-compatible" and not re.match(r"^[^@\s]+@https?://\S+$", rest):
            raise ValueError(f"{spec!r}: write openai-compatible:MODEL@http://HOST:PORT/v1")
        return spec


class RunSettings(Strict):
    """How the grid is played; may change when a run is resumed."""

    devices: str | list[str] = "auto"
    """``auto`` (every GPU, else the CPU), ``cpu``, ``cuda``, or a list such as ["cuda:0", "cuda:1"]."""
    workers: int | None = Field(default=None, ge=1, le=64)
    """Evaluation workers on the CPU (default: half the cores, at most 4); on GPUs one per device."""
    concurrency: int = Field(default=4, ge=1, le=256)
    """Episodes in flight, hence model calls at once."""
    cache: str = "auto"
    """The response cache (``CACHE_MODES``): ``auto`` reads only answers that were not sampled (a model
    with ``temperature = 0`` and ``samples = 1``), so rerunning a sampled experiment samples again, and
    writes every answer; ``read-write`` reads whatever it holds; ``read-only`` never writes; ``off``
    never reads or writes."""
    cache_dir: str | None = None
    """Where the response cache lives (default: the agents' shared cache, ``$WARPGYM_CACHE_DIR`` or
    ``~/.cache/warpgym/responses``, so that running an experiment again costs nothing)."""
    eval_cache: bool = True
    """Judge each distinct (task, source) once per run; replayed or repeated answers reuse the verdict."""
    heldout: bool = True
    """Score each episode's best dev-correct candidate on the task's heldout shapes."""
    timing: bool = True
    """Time candidates on GPUs (there is no timing on the CPU)."""
    max_errors: int = Field(default=10, ge=1)
    """Stop the run after this many episodes ended in an error (a bad key, a dead server)."""
    executor: Literal["local", "ray"] = "local"
    """Where evaluations run: ``local`` (worker processes on this host) or ``ray`` (Ray actors on a
    cluster, one per GPU; needs ``pip install 'warpgym[ray]'``). See ``executors.py``. Keep
    ``concurrency`` at least the number of evaluators, or some of them wait for work."""
    workers_per_gpu: int = Field(default=1, ge=1, le=16)
    """Evaluators per GPU: above 1, one evaluation's compilation and checks overlap another's timing;
    timing on a GPU stays one at a time (a per-GPU file lock)."""
    ray_address: str | None = None
    """executor = "ray": the cluster to join (``auto``, ``HOST:6379``, ``ray://HOST:10001``); unset, a
    local Ray instance is started (or ``$RAY_ADDRESS`` joined, when set)."""

    @field_validator("cache", mode="before")
    @classmethod
    def _cache(cls, value: Any) -> Any:
        if isinstance(value, bool):  # the switch of runs saved before the modes existed
            return "auto" if value else "off"
        if value not in CACHE_MODES:
            modes = ", ".join(f'"{m}"' for m in CACHE_MODES)
            raise ValueError(f"unknown cache mode {value!r}; use one of {modes}")
        return value

    @field_validator("devices")
    @classmethod
    def _devices(cls, value: str | list[str]) -> str | list[str]:
        items = [value] if isinstance(value, str) else value
        if not items:
            raise ValueError('devices is empty; use "auto", "cpu", "cuda" or a list of cuda:N')
        for d in items:
            if d not in ("auto", "cpu", "cuda") and not re.match(r"^cuda:\d+$", d):
                raise ValueError(f"unknown device {d!r}; use auto, cpu, cuda or cuda:N")
        return value


class Budget(Strict):
    """Caps that stop the run cleanly; a stopped run resumes with a higher cap."""

    max_tokens: int | None = Field(default=None, gt=0)
    """Input plus output tokens of paid (uncached) calls, over the whole run."""
    max_cost_usd: float | None = Field(default=None, gt=0)


class MetricSettings(Strict):
    baseline: str = "eager"
    """The baseline speedups are measured against: eager, torch.compile or vendor."""
    pass_k: list[int] = Field(default_factory=lambda: [1, 5, 10])
    fast_p: list[float] = Field(default_factory=lambda: [0.0, 1.0, 1.5, 2.0])

    @field_validator("baseline")
    @classmethod
    def _baseline(cls, value: str) -> str:
        if value not in ("eager", "torch.compile", "vendor"):
            raise ValueError(f"unknown baseline {value!r}; use eager, torch.compile or vendor")
        return value

    @field_validator("pass_k")
    @classmethod
    def _pass_k(cls, value: list[int]) -> list[int]:
        if any(k < 1 for k in value):
            raise ValueError("pass_k values must be at least 1")
        return sorted(set(value))

    @field_validator("fast_p")
    @classmethod
    def _fast_p(cls, value: list[float]) -> list[float]:
        if any(p < 0 for p in value):
            raise ValueError("fast_p thresholds must be 0 or more")
        return sorted(set(value))


class Experiment(Strict):
    """A validated experiment file (see ``experiments/configs/*.toml`` for annotated examples)."""

    name: str
    description: str = ""
    tasks: list[str] = Field(min_length=1)
    """Task ids, globs (``fusion/*``), categories (``matmul``) or suites (``suite:triton``)."""
    suites: dict[str, str] = Field(default_factory=dict)
    """Imported suites by format: ``[suites] kernelbench = "PATH"`` (relative to the file); saved with the
    run as absolute paths, so a resumed run and its reports find the same tasks (docs/importers.md)."""
    include_trivial: bool = False
    """Play imported tasks that the triviality audit flagged (an answer computing nothing passes them)."""
    agents: list[str] = Field(min_length=1)
    """The agents' labels. The file writes loop names or references (``agent_refs``), or one
    ``[agents.LABEL]`` table of parameters per agent."""
    models: list[ModelEntry] = Field(min_length=1)
    contexts: list[str] = Field(default_factory=lambda: ["none"], min_length=1)
    context_levels: dict[str, LevelSpec] = Field(default_factory=dict)
    """Levels of the file's own: ``[context_levels.NAME] parts = [...]`` (experiments/context_levels.py)."""
    ablate: Ablation | None = None
    samples: int = Field(default=1, ge=1, le=1000)
    max_turns: int = Field(default=4, ge=1, le=100)
    history: str = "full"
    target: str = targets.DEFAULT
    run: RunSettings = Field(default_factory=RunSettings)
    budget: Budget = Field(default_factory=Budget)
    metrics: MetricSettings = Field(default_factory=MetricSettings)

    # Filled in by ``parse`` (and saved with the run), never written by hand.
    resolved_tasks: list[str] = Field(default_factory=list)
    resolved_agents: dict[str, ResolvedAgent] = Field(default_factory=dict)
    """Each agent's loop, where it is imported from, and its arguments with the defaults filled in."""
    source_path: str | None = None

    @field_validator("models", mode="before")
    @classmethod
    def _models(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"spec": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("target")
    @classmethod
    def _known_target(cls, value: str) -> str:
        return targets.check(value)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME.match(value):
            raise ValueError(f"{value!r}: use letters, digits, '.', '_' and '-' (it names the run directory)")
        return value

    @field_validator("models", mode="after")
    @classmethod
    def _unique_labels(cls, models: list[ModelEntry]) -> list[ModelEntry]:
        labels = [m.label for m in models]
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise ValueError(f"two models share the label {dup[0]!r}; give them distinct `name`s")
        return models

    def model(self, label: str) -> ModelEntry:
        return next(m for m in self.models if m.label == label)

    def levels(self) -> dict[str, Level]:
        """Every context level the grid plays (``contexts`` plus an ablation's base and levels)."""
        return levels_mod.levels(self.contexts, self.context_levels, self.ablate)

    def agent(self, label: str) -> ResolvedAgent:
        """An agent's loop and arguments (a built-in loop with its defaults for runs saved before agents
        were resolved)."""
        return self.resolved_agents.get(label) or agent_refs.builtin([label])[label]

    def identity(self) -> dict[str, Any]:
        """The fields that define the episodes; a resumed run must keep them."""
        return {
            "tasks": self.resolved_tasks,
            "agents": self.agents,
            "agent_settings": {a: self.agent(a).settings() for a in self.agents},
            "models": [m.model_dump(exclude={"params", "prices"}) for m in self.models],
            "contexts": self.contexts,
            **({"context_levels": {k: v.model_dump() for k, v in self.context_levels.items()}}
               if self.context_levels else {}),
            **({"ablate": self.ablate.model_dump()} if self.ablate else {}),
            "samples": self.samples,
            "max_turns": self.max_turns,
            "history": self.history,
            "target": self.target,
            "baseline": self.metrics.baseline,
        }

    def to_json(self) -> str:
        return json.dumps(self.model_dump(), indent=1, sort_keys=False)


# --------------------------------------------------------------------------- locating keys
_KEY = r'(?:[A-Za-z0-9_-]+|"[^"]*"|\'[^\']*\')'
_KEY_LINE = re.compile(rf"^\s*({_KEY}(?:\s*\.\s*{_KEY})*)\s*=")
_HEADER = re.compile(rf"^\s*(\[\[?)\s*({_KEY}(?:\s*\.\s*{_KEY})*)\s*\]\]?")


def _split_key(text: str) -> list[str]:
    parts = re.findall(_KEY, text)
    return [p[1:-1] if p[:1] in "\"'" else p for p in parts]


def key_lines(text: str) -> dict[tuple[Any, ...], tuple[int, int]]:
    """Each key's path (with array-of-table indices) -> (first line, last line) of its value."""
    spans: dict[tuple[Any, ...], tuple[int, int]] = {}
    table: tuple[Any, ...] = ()
    counters: dict[tuple[Any, ...], int] = {}
    last: tuple[Any, ...] | None = None
    in_multiline = False
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if in_multiline:
            if line.count('"""') % 2 == 1 or line.count("'''") % 2 == 1:
                in_multiline = False
            continue
        header = _HEADER.match(line)
        if header:
            path = tuple(_split_key(header.group(2)))
            if header.group(1) == "[[":
                counters[path] = counters.get(path, -1) + 1
                table = (*path, counters[path])
            else:
                table = path
            spans[table] = (number, number)
            last = None
            continue
        key = _KEY_LINE.match(line)
        if key:
            last = (*table, *_split_key(key.group(1)))
            spans[last] = (number, number)
            rest = line[key.end() :]
            if rest.count('"""') % 2 == 1 or rest.count("'''") % 2 == 1:
                in_multiline = True
            continue
        if last is not None and line.strip() and not line.strip().startswith("#"):
            spans[last] = (spans[last][0], number)
    return spans


def locate(text: str, loc: tuple[Any, ...], value: Any = None) -> int | None:
    """The line of the deepest key of ``loc`` found in ``text``; with ``value``, the line within
    that key's value that holds it (an element of a multi-line array, an inline table's key)."""
    spans = key_lines(text)
    lines = text.splitlines()
    for depth in range(len(loc), 0, -1):
        span = spans.get(tuple(loc[:depth]))
        if span is None:
            continue
        first, end = span
        needles = []
        if value is not None:
            needles.append(json.dumps(value) if isinstance(value, str) else str(value))
        needles += [str(part) for part in loc[depth:] if isinstance(part, str)]
        for needle in needles:
            for number in range(first, end + 1):
                if needle in lines[number - 1]:
                    return number
        return first
    return None


def _field_name(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _allowed_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys allowed where ``loc`` points (for "did you mean")."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        info = current.model_fields.get(part) if isinstance(current, type) else None
        if info is None:
            return []
        annotation = info.annotation
        args = getattr(annotation, "__args__", ())
        candidates = [annotation, *args]
        current = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if current is None:
            return []
    hidden = HIDDEN
    return [k for k in current.model_fields if k not in hidden] if isinstance(current, type) else []


# --------------------------------------------------------------------------- loading
HIDDEN = frozenset({"resolved_tasks", "resolved_agents", "source_path"})


def parse(text: str, where: str = "<config>", base_dir: Path | None = None) -> Experiment:
    """Validate the text of an experiment file; every problem found is listed in one ConfigError."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML: {exc}") from None
    hidden = HIDDEN & set(data)
    problems: list[tuple[int, str]] = []

    def add(loc: tuple[Any, ...], message: str, value: Any = None) -> None:
        line = locate(text, loc, value)
        at = f"{where}, line {line}" if line else where
        problems.append((line or 0, f"{at}: {_field_name(loc)}: {message}"))

    for key in sorted(hidden):
        add((key,), "is written by warpgym, not by hand")
    _use_suites(data, base_dir, add)
    resolved = _name_problems(data, add)
    resolved = _without_trivial(resolved, data, add)
    target = data.get("target") if isinstance(data.get("target"), str) else targets.DEFAULT
    levels_mod.problems(data, target, base_dir, add)
    labels, agents = agent_refs.resolve(data.get("agents"), base_dir, add, known_history_modes())
    fields = {k: v for k, v in data.items() if k not in hidden}
    raw_agents = fields.get("agents")
    names_only = isinstance(raw_agents, list) and all(isinstance(a, str) for a in raw_agents)
    if isinstance(raw_agents, dict) or names_only:
        fields["agents"] = labels  # "pkg.mod:beam" is the agent "beam"
    exp: Experiment | None = None
    try:
        exp = Experiment.model_validate(fields)
    except ValidationError as exc:
        for err in exc.errors():
            loc = tuple(err["loc"])
            if err["type"] == "extra_forbidden":
                allowed = _allowed_keys(Experiment, loc)
                near = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
                hint = f"; did you mean {near[0]!r}?" if near else f"; allowed: {', '.join(allowed)}"
                if loc[0] == "models" and not near:
                    hint += f" (call parameters go in params = {{ {loc[-1]} = ... }})"
                add(loc, f"unknown key{hint}")
            elif err["type"] == "missing":
                add(loc, "is required")
            else:
                msg = err["msg"].removeprefix("Value error, ")
                value = err.get("input") if isinstance(err.get("input"), str | int | float) else None
                add(loc, msg, value)
    if exp is not None:
        _resolve_paths(exp, base_dir, add)
        exp.resolved_tasks = resolved
        exp.suites = _suites_used(resolved)
        exp.resolved_agents = agents
        played = exp.contexts if exp.ablate is None or "contexts" in data else []  # an ablation alone
        exp.contexts = list(dict.fromkeys([*played, *levels_mod.levels(played, exp.context_levels,
                                                                       exp.ablate)]))
        _executor_problems(exp, add)
        _pass_k_problems(exp, data, add)
    if problems:
        raise ConfigError("\n".join(msg for _, msg in sorted(problems, key=lambda p: p[0])))
    assert exp is not None
    return exp


def _pass_k_problems(exp: Experiment, data: dict[str, Any], add: Any) -> None:
    """A k the file asks for must be reportable: pass@k needs k samples per (task, agent, model, context).
    The default list is not the file's request, so its larger values are simply not reported."""
    if "pass_k" not in (data.get("metrics") or {}):
        return
    for k in exp.metrics.pass_k:
        if k > exp.samples:
            add(("metrics", "pass_k"), f"pass@{k} needs at least {k} samples per (task, agent, model, "
                f"context), but samples = {exp.samples}: lower k or raise samples", k)


def _name_problems(data: dict[str, Any], add: Any) -> list[str]:
    """Names that must exist (tasks, contexts, history mode; agents are ``agent_refs``'); returns the
    resolved task ids."""
    from warpgym.tasks import UnknownTaskError, select

    resolved: list[str] = []
    tasks = data.get("tasks")
    for i, pattern in enumerate(tasks if isinstance(tasks, list) else []):
        if not isinstance(pattern, str):
            continue
        try:
            resolved += [t.id for t in select([pattern])]
        except UnknownTaskError as exc:
            add(("tasks", i), str(exc), pattern)
    names = (("contexts", tuple(levels_mod.context_names(data)), "context level"),)
    for field, known, what in names:
        values = data.get(field)
        values = [v for v in values if isinstance(v, str)] if isinstance(values, list) else []
        for i, value in enumerate(values):
            if value not in known:
                near = difflib.get_close_matches(value, known, n=1)
                hint = f"did you mean {near[0]!r}?" if near else f"use one of {', '.join(known)}"
                add((field, i), f"unknown {what} {value!r}; {hint}", value)
        dup = sorted({v for v in values if values.count(v) > 1})
        if dup:
            add((field,), f"{dup[0]!r} is listed twice")
    history = data.get("history")
    if isinstance(history, str) and history not in known_history_modes():
        add(("history",), f"unknown history mode {history!r}; use one of {', '.join(known_history_modes())}")
    return list(dict.fromkeys(resolved))


def ray_available() -> bool:
    """Whether Ray can be imported (without importing it: that takes seconds)."""
    import importlib.util

    return importlib.util.find_spec("ray") is not None


def _executor_problems(exp: Experiment, add: Any) -> None:
    run = exp.run
    if run.executor == "ray":
        if not ray_available():
            add(("run", "executor"), "Ray is not installed; pip install 'warpgym[ray]' (or use \"local\")")
        if isinstance(run.devices, list):
            add(
                ("run", "devices"),
                'a list of devices is for the local executor; with ray use "auto", '
                '"cuda" or "cpu" (the cluster decides which GPUs)',
            )
    elif run.ray_address is not None:
        add(("run", "ray_address"), 'is only used with executor = "ray"')


def _resolve_paths(exp: Experiment, base_dir: Path | None, add: Any) -> None:
    """Replay recordings and the cache directory, relative to the experiment file."""
    for i, model in enumerate(exp.models):
        kind, _, rest = model.spec.partition(":")
        if kind != "replay":
            continue
        path = Path(rest).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.exists():
            add(("models", i, "spec"), f"no recordings at {path}", model.spec)
            continue
        model.name = model.name or f"replay:{Path(rest).stem}"
        model.spec = f"replay:{path.resolve()}"
    if exp.run.cache_dir is not None and base_dir is not None and not Path(exp.run.cache_dir).is_absolute():
        exp.run.cache_dir = str((base_dir / exp.run.cache_dir).resolve())


def load(path: str | Path) -> Experiment:
    """Read and validate an experiment file; relative paths in it are relative to the file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no such experiment file: {path}")
    exp = parse(path.read_text(), where=str(path), base_dir=path.resolve().parent)
    exp.source_path = str(path.resolve())
    return exp


def from_resolved(data: dict[str, Any]) -> Experiment:
    """The experiment as saved with a run (already resolved: no task lookup, but its imported suites are
    registered again from the paths it saved)."""
    exp = Experiment.model_validate(data)
    if exp.suites:
        from warpgym.tasks.importers import use

        use(exp.suites)
    return exp


def _use_suites(data: dict[str, Any], base_dir: Path | None, add: Any) -> None:
    """Register the file's imported suites (and those ``warpgym tasks import`` saved) before task names
    are resolved."""
    from warpgym.tasks.importers import ADAPTERS, SuiteSourceError, use, use_configured

    use_configured()
    suites = data.get("suites")
    if not isinstance(suites, dict):
        return
    for fmt, path in suites.items():
        if fmt not in ADAPTERS:
            add(("suites", fmt), f"unknown suite format {fmt!r}; use one of {', '.join(sorted(ADAPTERS))}")
            continue
        if not isinstance(path, str):
            continue
        full = Path(path).expanduser()
        full = full if full.is_absolute() or base_dir is None else base_dir / full
        try:
            use({fmt: str(full)})
        except SuiteSourceError as exc:
            add(("suites", fmt), str(exc), path)
        suites[fmt] = str(full.resolve())


def _without_trivial(resolved: list[str], data: dict[str, Any], add: Any) -> list[str]:
    """Imported tasks the triviality audit flags are left out unless ``include_trivial = true``."""
    from warpgym.tasks import get_task

    imported = [get_task(t) for t in resolved if get_task(t).model is not None]
    if not imported or data.get("include_trivial") is True:
        return resolved
    from warpgym.env.judge.triviality import audited

    flagged = {tid for tid, a in audited(imported).items() if a.get("trivial")}
    kept = [t for t in resolved if t not in flagged]
    if not kept:
        add(("tasks",), f"every task it names is flagged trivial ({', '.join(sorted(flagged))}); set "
            "include_trivial = true to play them anyway")
    return kept


def _suites_used(resolved: list[str]) -> dict[str, str]:
    """The imported suites the resolved tasks come from, by format, with their absolute paths."""
    from warpgym.tasks import get_task
    from warpgym.tasks.importers import active_sources

    formats = {get_task(t).model.format for t in resolved if get_task(t).model is not None}  # type: ignore[union-attr]
    return {fmt: path for fmt, path in active_sources().items() if fmt in formats}


BUNDLED = Path(__file__).parent / "configs"


def find(name_or_path: str) -> Path:
    """A path as given, or a config shipped with warpgym by name (``quickstart``)."""
    path = Path(name_or_path)
    if path.exists():
        return path
    bundled = BUNDLED / (name_or_path if name_or_path.endswith(".toml") else f"{name_or_path}.toml")
    if "/" not in name_or_path and bundled.is_file():
        return bundled
    names = sorted(p.stem for p in BUNDLED.glob("*.toml"))
    raise ConfigError(f"no such experiment file: {name_or_path} (bundled configs: {', '.join(names)})")
