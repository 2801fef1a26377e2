"""Agents as an experiment file names them: a built-in loop, a loop registered in the user's own code,
and each agent's parameters.

An agent is a loop of ``warpgym.agents.LOOPS`` with arguments. The file names the loop as

- a registered name: ``"fix-retry"``, ``"one-shot"``;
- ``"MODULE:NAME"``: ``"mypkg.loops:beam"`` imports ``mypkg.loops`` (whose ``@LOOPS.register`` runs)
  and takes its loop ``beam`` (a registered name, or the builder function of that name);
- ``"FILE.py:NAME"``: the same from a Python file, relative to the experiment file;
- an entry point's name in the group ``warpgym.agents`` (a package's ``[project.entry-points]``),
  pointing at a registered builder function or at a module that registers the loop under that name.

The run's resolved config keeps where each loop came from, so ``warpgym run --resume RUN`` imports it
again, and keeps every parameter with the loop's defaults filled in.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

ENTRY_POINT_GROUP = "warpgym.agents"
EPISODE_PARAMS = ("history", "loop")
"""Keys of an agent's table that are not the loop's arguments: the prompt's history mode, the loop."""
BUILDER_ARGS = frozenset({"ep", "is_async", "checkpointer"})
"""A builder's arguments that the runner passes, never the file."""


class AgentError(ValueError):
    """An agent that cannot be found, imported or given these parameters."""


class ResolvedAgent(BaseModel):
    """One agent as the run keeps it: the loop's registered name, where it came from, its arguments."""

    model_config = ConfigDict(extra="forbid")

    loop: str
    module: str | None = None
    file: str | None = None
    entry_point: str | None = None
    params: dict[str, Any] = {}
    history: str | None = None
    """Overrides the experiment's ``history`` for this agent."""

    def origin(self) -> str:
        if self.module:
            return f"{self.module}:{self.loop}"
        if self.file:
            return f"{self.file}:{self.loop}"
        if self.entry_point:
            return f"entry point {self.entry_point!r} ({ENTRY_POINT_GROUP})"
        return self.loop

    def settings(self) -> dict[str, Any]:
        """What changes the episodes (the identity a resumed run must keep)."""
        return {"loop": self.loop, "params": self.params, "history": self.history}


# --------------------------------------------------------------------------- finding a loop
def _loops() -> Any:
    from warpgym.agents import LOOPS

    return LOOPS


def _import_file(path: Path) -> Any:
    """A Python file as a module, imported once per process (its loops register once)."""
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:10]
    name = f"warpgym_user_{path.stem.replace('-', '_')}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AgentError(f"{path} is not a Python file that can be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _entry_point(name: str) -> Any | None:
    from importlib.metadata import entry_points

    found = list(entry_points(group=ENTRY_POINT_GROUP, name=name))
    return found[0] if found else None


def _imported(agent: ResolvedAgent) -> Any:
    """Import what the agent's loop lives in; any failure is an ``AgentError`` saying what to fix."""
    what = agent.origin()
    try:
        if agent.module:
            return importlib.import_module(agent.module)
        if agent.file:
            path = Path(agent.file)
            if not path.is_file():
                raise AgentError(f"agent loop {what}: no such file {path}")
            return _import_file(path)
        if agent.entry_point:
            ep = _entry_point(agent.entry_point)
            if ep is None:
                raise AgentError(f"no entry point {agent.entry_point!r} in the group {ENTRY_POINT_GROUP} "
                                 "(is the package that declares it installed?)")
            return ep.load()
    except AgentError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's module: any import error is reported, not raised
        raise AgentError(f"agent loop {what}: cannot import it: {type(exc).__name__}: {exc}") from None
    return None


def _registered_in(module: Any) -> list[str]:
    loops = _loops()
    name = getattr(module, "__name__", None)
    return sorted(n for n in loops if getattr(loops[n].build, "__module__", None) == name)


def _find_spec(agent: ResolvedAgent, source: Any) -> Any:
    """The loop's ``LoopSpec`` once its module is imported: by registered name, or by builder function."""
    loops = _loops()
    if agent.loop in loops:
        return loops[agent.loop]
    is_function = callable(source) and not inspect.ismodule(source)
    target = source if is_function else getattr(source, agent.loop, None)
    for name in loops:
        if target is not None and loops[name].build is target:
            return loops[name]
    if target is not None and callable(target):
        raise AgentError(f"agent loop {agent.origin()}: {agent.loop!r} is a function that no "
                         "@LOOPS.register(...) registered; decorate it")
    listed = _registered_in(source) if inspect.ismodule(source) else []
    hint = f"it registers {', '.join(listed)}" if listed else "it registers no loop"
    raise AgentError(f"agent loop {agent.origin()}: no loop {agent.loop!r} there ({hint})")


def load(agent: ResolvedAgent) -> Any:
    """Import the agent's loop where needed and return its ``LoopSpec``."""
    source = _imported(agent)
    return _find_spec(agent, source)


def _origin_of(spec: Any) -> ResolvedAgent:
    """A loop registered already (built in, or by code imported earlier in this process), with where it
    came from, so that a new process can import it again."""
    module = getattr(spec.build, "__module__", "") or ""
    if module == "warpgym.agents.loops" or module == "__main__":
        return ResolvedAgent(loop=spec.name)  # built in; or a script's own, which nothing can re-import
    if module.startswith("warpgym_user_"):
        return ResolvedAgent(loop=spec.name, file=spec.build.__code__.co_filename)
    return ResolvedAgent(loop=spec.name, module=module)


def parse_reference(ref: str, base_dir: Path | None) -> ResolvedAgent:
    """``ResolvedAgent`` (loop and origin, no parameters yet) for what the file wrote."""
    loops = _loops()
    if ref in loops:
        return _origin_of(loops[ref])
    where, sep, name = ref.rpartition(":")
    if sep and where and name:
        if where.endswith(".py") or "/" in where:
            path = Path(where).expanduser()
            if not path.is_absolute() and base_dir is not None:
                path = base_dir / path
            return ResolvedAgent(loop=name, file=str(path.resolve()))
        return ResolvedAgent(loop=name, module=where)
    if _entry_point(ref) is not None:
        return ResolvedAgent(loop=ref, entry_point=ref)
    near = difflib.get_close_matches(ref, list(loops), n=1)
    hint = f"did you mean {near[0]!r}?" if near else f"use one of {', '.join(sorted(loops))}"
    raise AgentError(f"unknown agent {ref!r}; {hint} (a loop of your own: \"module:name\" or "
                     "\"file.py:name\")")


# --------------------------------------------------------------------------- parameters
def loop_parameters(spec: Any) -> tuple[dict[str, Any], bool]:
    """The arguments an experiment file may give this loop, with their defaults, and whether the builder
    takes any keyword at all (``**kwargs``)."""
    params = dict(spec.defaults)
    open_ended = False
    for p in inspect.signature(spec.build).parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            open_ended = True
        elif p.name not in BUILDER_ARGS and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
            if p.default is not inspect.Parameter.empty:
                params.setdefault(p.name, p.default)
    return params, open_ended


def _type_problem(name: str, value: Any, default: Any) -> str | None:
    if default is None or value is None:
        return None
    if isinstance(default, bool):
        return None if isinstance(value, bool) else f"{name} is true or false, not {value!r}"
    if isinstance(default, int | float) and not isinstance(default, bool):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if isinstance(default, int) and ok and not isinstance(value, int):
            ok = False
        return None if ok else f"{name} is a {type(default).__name__}, not {value!r}"
    if isinstance(default, str):
        return None if isinstance(value, str) else f"{name} is a string, not {value!r}"
    return None


def check_params(spec: Any, params: dict[str, Any]) -> list[tuple[str, str]]:
    """(parameter, problem) for each argument the loop does not take or takes in another type."""
    known, open_ended = loop_parameters(spec)
    problems = []
    for name, value in params.items():
        if name not in known:
            if open_ended:
                continue
            allowed = sorted(known) + list(EPISODE_PARAMS)
            near = difflib.get_close_matches(name, allowed, n=1)
            hint = f"did you mean {near[0]!r}?" if near else f"it takes {', '.join(allowed)}"
            problems.append((name, f"loop {spec.name!r} has no parameter {name!r}; {hint}"))
            continue
        problem = _type_problem(name, value, known[name])
        if problem:
            problems.append((name, f"loop {spec.name!r}: {problem}"))
    return problems


# --------------------------------------------------------------------------- an experiment's agents
Report = Callable[..., None]
"""``add(location, message, value=None)``: how ``config.parse`` collects a problem with its line."""


def resolve(raw: Any, base_dir: Path | None, add: Report, history_modes: tuple[str, ...]
            ) -> tuple[list[str], dict[str, ResolvedAgent]]:
    """The agents' labels and their resolved loops from the file's ``agents`` (a list of loop names or
    references, or a table of ``[agents.LABEL]`` tables); each problem goes to ``add``."""
    entries: list[tuple[str, Any, dict[str, Any]]] = []  # (label, location, table)
    if isinstance(raw, list):
        for i, item in enumerate(raw):
            if isinstance(item, str):
                label = item.rpartition(":")[2] if ":" in item else item
                entries.append((label, ("agents", i), {"loop": item}))
    elif isinstance(raw, dict):
        for label, table in raw.items():
            if not isinstance(table, dict):
                add(("agents", label), "each [agents.NAME] is a table of the agent's parameters "
                    "(or write agents = [\"name\", ...])")
                continue
            entries.append((label, ("agents", label), table))
    elif raw is not None:
        add(("agents",), "a list of agent names, or [agents.NAME] tables")
        return [], {}
    labels = [label for label, _, _ in entries]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        add(("agents",), f"two agents are both called {dup[0]!r}; name them apart with [agents.NAME] tables, "
            "each with its loop = ...")
    resolved: dict[str, ResolvedAgent] = {}
    for label, loc, table in entries:
        agent = _resolve_one(label, loc, dict(table), base_dir, add, history_modes)
        if agent is not None:
            resolved[label] = agent
    return labels, resolved


def _resolve_one(label: str, loc: tuple[Any, ...], table: dict[str, Any], base_dir: Path | None,
                 add: Report, history_modes: tuple[str, ...]) -> ResolvedAgent | None:
    list_form = loc[-1] != label
    ref_loc = (*loc, "loop") if "loop" in table and not list_form else loc
    ref = table.pop("loop", label)
    if not isinstance(ref, str):
        add(ref_loc, f"loop is a name or \"module:name\", not {ref!r}")
        return None
    history = table.pop("history", None)
    if history is not None and history not in history_modes:
        add((*loc, "history"), f"unknown history mode {history!r}; use one of {', '.join(history_modes)}")
    try:
        agent = parse_reference(ref, base_dir)
        spec = load(agent)
    except AgentError as exc:
        add(ref_loc, str(exc), ref if list_form else None)
        return None
    problems = check_params(spec, table)
    for name, message in problems:
        add((*loc, name), message)
    if problems:
        return None
    defaults, _ = loop_parameters(spec)
    agent.loop = spec.name
    agent.params = {**defaults, **table}
    agent.history = history
    return agent


def load_all(agents: dict[str, ResolvedAgent]) -> dict[str, Any]:
    """Each agent's ``LoopSpec``, importing its module again (a resumed run in a new process)."""
    specs = {}
    for label, agent in agents.items():
        try:
            specs[label] = load(agent)
        except AgentError as exc:
            raise AgentError(f"agent {label!r}: {exc}; the run was started with it, so make it importable "
                             "again (install the package, or restore the file) and resume") from None
    return specs


def builtin(labels: list[str]) -> dict[str, ResolvedAgent]:
    """Resolved agents for a run saved before agents were resolved: each label is a built-in loop."""
    loops = _loops()
    out = {}
    for label in labels:
        defaults = loop_parameters(loops[label])[0] if label in loops else {}
        out[label] = ResolvedAgent(loop=label, params=defaults)
    return out
