"""The agent loops as LangGraph graphs over a typed state.

The shape follows LangGraph's code-assistant: ``generate`` asks the model, ``evaluate`` judges the
answer in the environment, and a routing function of the state picks the next step:

    START -> generate -> evaluate -> done (END) | fix -> generate | optimise -> generate

``fix`` and ``optimise`` add the next user message (the judge's verdict, or the timing and
instruction report once the candidate is correct). The turn budget is the ``turn`` counter in the
state, not LangGraph's recursion limit, and a wrong kernel is an edge of the graph, not an
exception: exceptions are for failed API calls (retried in the provider) and bugs.

Heavy objects (provider, environment, task) live in an ``Episode`` that the nodes close over; the
state holds only plain data, so it can be checkpointed, logged and rebuilt from ``TurnRecord``s
(that is how ``resume`` works).

A new strategy on this graph needs no graph of its own: its builder sets ``Episode.route`` (the next
phase after a turn: ``done``, ``fix``, ``optimise``, or ``generate`` for a fresh answer to the task
alone) and, if it words the follow-ups differently, ``Episode.prompt``, then returns
``build_graph(ep, ...)``. Resume replays stored turns through the same two functions, so such a
loop resumes like the built-in ones. ``experiments/examples/best_of_n.py`` is one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from warpgym.env.candidate import Candidate
from warpgym.prompts import feedback_prompt, optimise_prompt, system_prompt, task_prompt

from .api import LOOPS, EpisodeResult, EpisodeSettings, Provider, TurnRecord
from .best import best_index, outcome_of
from .extract import extract_candidate

if TYPE_CHECKING:
    from warpgym.env import KernelEnv
    from warpgym.tasks import Task


class EpisodeState(TypedDict, total=False):
    """What the graph carries between nodes: plain data only."""

    task: str
    messages: list[dict[str, str]]
    """The whole conversation so far (system, task, then answer / follow-up pairs)."""
    attempts: list[dict[str, Any]]
    """``TurnRecord.to_dict()`` of every finished turn, in order."""
    best: dict[str, Any] | None
    """The best attempt so far (``agents.best``), None while no attempt was correct."""
    turn: int
    """Turns finished; the next turn is ``turn + 1``."""
    max_turns: int
    phase: str
    """The phase of the next turn (generate, fix, optimise) or ``done``."""
    pending: dict[str, Any] | None
    """The model's answer between ``generate`` and ``evaluate``."""


@dataclass
class Episode:
    """The objects one episode's nodes work with."""

    task: Task
    loop: str
    provider: Provider
    env: KernelEnv
    context: str
    history: str
    sample: int
    max_turns: int
    target: str
    on_turn: Callable[[TurnRecord], None] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    context_text: str | None = None
    records: list[TurnRecord] = field(default_factory=list)
    agent: str = ""
    """The experiment's name for this loop with its arguments (``EpisodeSettings.agent``); the loop's
    own name when empty."""
    route: Route | None = None
    """The next phase after a turn (``next_phase``'s rule when None); the turn budget always ends it."""
    prompt: Prompt | None = None
    """The messages that open the next turn of a phase (``standard_followup`` when None)."""

    @property
    def language(self) -> str:
        return self.task.language

    @property
    def baseline(self) -> str:
        """The baseline the environment's reward, and so the best turn, measure speedup against."""
        return self.env.reward_fn.baseline

    @property
    def name(self) -> str:
        return self.agent or self.loop

    def metadata(self, turn: int, phase: str) -> dict[str, Any]:
        return {"task": self.task.id, "sample": self.sample, "turn": turn, "loop": self.name,
                "context": self.context, "phase": phase, "history": self.history}


Route = Callable[[Episode, TurnRecord], str]
"""``(episode, the turn just finished) -> "done" | "fix" | "optimise" | "generate"``; ``episode.records``
holds every finished turn, this one last."""
Prompt = Callable[[Episode, EpisodeState, str], list[dict[str, str]]]
"""``(episode, state, phase) -> the whole conversation`` the next turn continues (``visible_messages``
then trims it as ``history`` says)."""


# -- pure state transitions (shared by the nodes and by resume) ---------------------------------
def initial_state(ep: Episode) -> EpisodeState:
    system = system_prompt(language=ep.language, target=ep.target, entrypoint=ep.task.entrypoint,
                           context=ep.context, hardware=ep.context_text)
    user = task_prompt(statement=ep.task.statement(), target=ep.target, entrypoint=ep.task.entrypoint,
                       language=ep.language)
    return EpisodeState(task=ep.task.id, messages=[{"role": "system", "content": system},
                                                   {"role": "user", "content": user}],
                        attempts=[], best=None, turn=0, max_turns=ep.max_turns, phase="generate",
                        pending=None)


def visible_messages(state: EpisodeState, history: str) -> list[dict[str, str]]:
    """What the model is sent: everything (``full``), or the system and task messages plus only the last
    answer and its follow-up (``last``)."""
    messages = state["messages"]
    if history == "last" and len(messages) > 4:
        return messages[:2] + messages[-2:]
    return list(messages)


def best_attempt(attempts: list[dict[str, Any]], baseline: str) -> dict[str, Any] | None:
    """The best of ``TurnRecord`` dicts (``agents.best``)."""
    i = best_index([outcome_of(a.get("result"), baseline) for a in attempts])
    return None if i is None else attempts[i]


def next_phase(ep: Episode, record: TurnRecord, turn: int) -> str:
    """Where the loop goes after a finished turn: the loop's ``route`` within the turn budget, or the
    standard rule."""
    if ep.options.get("single_turn") or ep.loop == "one-shot" or turn >= ep.max_turns:
        return "done"
    if ep.route is not None:
        phase = ep.route(ep, record)
        if phase not in ROUTES:
            raise ValueError(f"loop {ep.loop!r} routed to {phase!r}; a route is one of {', '.join(ROUTES)}")
        return phase
    return standard_phase(ep, record)


ROUTES = ("done", "fix", "optimise", "generate")


def standard_phase(ep: Episode, record: TurnRecord) -> str:
    """fix-retry's rule: done once solved (unless ``keep_optimising``), optimise a correct candidate
    (unless ``optimise`` is off), fix anything else."""
    if record.terminated and not ep.options.get("keep_optimising", False):
        return "done"
    result = record.result or {}
    if result.get("correct") and result.get("required_features_met") is not False:
        return "optimise" if ep.options.get("optimise", True) else "done"
    if record.result is not None and result.get("correct") is None and result.get("compiled") \
            and not result.get("violations"):
        return "done"  # built and clean, but this device cannot check it (CUDA on a CPU): nothing to fix
    return "fix"


def apply_record(ep: Episode, state: EpisodeState, record: TurnRecord) -> EpisodeState:
    """The state after ``record``'s turn: its answer appended, attempts, best and turn updated, the next
    phase chosen."""
    attempts = state["attempts"] + [record.to_dict()]
    return EpisodeState(
        messages=state["messages"] + [{"role": "assistant", "content": record.response}],
        attempts=attempts,
        best=best_attempt(attempts, ep.baseline),
        turn=record.turn,
        phase=next_phase(ep, record, record.turn),
        pending=None,
    )


def followup(ep: Episode, state: EpisodeState, phase: str) -> EpisodeState:
    """The conversation that opens the next turn: the loop's ``prompt``, or ``standard_followup``."""
    if ep.prompt is not None:
        return EpisodeState(messages=ep.prompt(ep, state, phase), phase=phase)
    return standard_followup(ep, state, phase)


def standard_followup(ep: Episode, state: EpisodeState, phase: str) -> EpisodeState:
    """``fix`` and ``optimise`` add a user message (the verdict, or the timing and instruction report);
    ``generate`` starts again from the system and task messages alone (a fresh, independent answer)."""
    if phase == "generate":
        return EpisodeState(messages=list(state["messages"][:2]), phase=phase)
    last = state["attempts"][-1]
    best = state.get("best")
    show_best = best if (ep.history == "last" and best and best["turn"] != last["turn"]) else None
    if phase == "optimise":
        text = optimise_prompt(turn=last["turn"], max_turns=ep.max_turns, feedback=last["feedback"],
                               target=ep.target, reward=last["reward"], best=show_best, language=ep.language)
    else:
        text = feedback_prompt(turn=last["turn"], max_turns=ep.max_turns, feedback=last["feedback"],
                               extraction_problem=last["extraction_problem"], best=show_best,
                               language=ep.language)
    return EpisodeState(messages=state["messages"] + [{"role": "user", "content": text}], phase=phase)


def _phase_of_next_turn(state: EpisodeState) -> str:
    return "generate" if not state.get("attempts") else state["phase"]


# -- the turn's two halves ------------------------------------------------------------------------
def _pending(ep: Episode, state: EpisodeState, sent: list[dict[str, str]], completion: Any) -> EpisodeState:
    extraction = extract_candidate(completion.text, ep.task.entrypoint)
    return EpisodeState(pending={
        "phase": _phase_of_next_turn(state), "sent": sent, "completion": completion.to_dict(),
        "candidate": extraction.code, "attachments": dict(extraction.attachments),
        "problem": extraction.problem,
    })


def _record(ep: Episode, state: EpisodeState, outcome: tuple[Any, ...] | None, eval_s: float) -> TurnRecord:
    pending = state["pending"] or {}
    completion = pending["completion"]
    turn = state["turn"] + 1
    if outcome is None:
        feedback, result, reward, terminated = pending["problem"] or "", None, 0.0, False
    else:
        obs, reward, terminated, _truncated, info = outcome
        feedback, result = obs["feedback"], dict(info["result"])
        # The root of the turn's inputs, kept from the agent's info but recorded, so a run replays a verdict.
        last = getattr(getattr(ep.env, "unwrapped", ep.env), "last_result", None)
        if last is not None and getattr(last, "input_seed", None) is not None:
            result["input_seed"] = last.input_seed
    return TurnRecord(
        turn=turn, phase=pending["phase"], messages=pending["sent"], response=completion["text"],
        candidate=pending["candidate"], extraction_problem=pending["problem"], feedback=feedback,
        result=result, reward=float(reward), terminated=bool(terminated),
        truncated=bool(not terminated and turn >= ep.max_turns),
        input_tokens=completion["input_tokens"], output_tokens=completion["output_tokens"],
        reasoning_tokens=completion["reasoning_tokens"], cost_usd=completion["cost_usd"],
        latency_s=completion["latency_s"], cached=completion["cached"], model=completion.get("model", ""),
        eval_s=eval_s, attachments=dict(pending.get("attachments") or {}),
        origin=completion.get("origin", "paid"), recorded_cost_usd=completion.get("recorded_cost_usd"),
    )


def _judged(state: EpisodeState) -> Candidate | str | None:
    """What the environment is handed: the module alone, or with the files it carries."""
    pending = state.get("pending") or {}
    source, attachments = pending.get("candidate"), pending.get("attachments")
    if source is None or not attachments:
        return source
    return Candidate(source, attachments)


def _finish_turn(ep: Episode, state: EpisodeState, record: TurnRecord) -> EpisodeState:
    ep.records.append(record)
    if ep.on_turn is not None:
        ep.on_turn(record)
    return apply_record(ep, state, record)


def _nodes(ep: Episode, is_async: bool) -> dict[str, Callable[..., Any]]:
    def generate(state: EpisodeState) -> EpisodeState:
        sent = visible_messages(state, ep.history)
        meta = ep.metadata(state["turn"] + 1, _phase_of_next_turn(state))
        return _pending(ep, state, sent, ep.provider.complete(sent, metadata=meta))

    async def agenerate(state: EpisodeState) -> EpisodeState:
        sent = visible_messages(state, ep.history)
        meta = ep.metadata(state["turn"] + 1, _phase_of_next_turn(state))
        return _pending(ep, state, sent, await ep.provider.acomplete(sent, metadata=meta))

    def evaluate(state: EpisodeState) -> EpisodeState:
        candidate = _judged(state)
        started = time.perf_counter()
        outcome = ep.env.step(candidate) if candidate is not None else None
        record = _record(ep, state, outcome, time.perf_counter() - started)
        return _finish_turn(ep, state, record)

    async def aevaluate(state: EpisodeState) -> EpisodeState:
        candidate = _judged(state)
        started = time.perf_counter()
        outcome = await asyncio.to_thread(ep.env.step, candidate) if candidate is not None else None
        record = _record(ep, state, outcome, time.perf_counter() - started)
        return _finish_turn(ep, state, record)

    def fix(state: EpisodeState) -> EpisodeState:
        return followup(ep, state, "fix")

    def optimise(state: EpisodeState) -> EpisodeState:
        return followup(ep, state, "optimise")

    def redraw(state: EpisodeState) -> EpisodeState:
        return followup(ep, state, "generate")

    return {"generate": agenerate if is_async else generate, "evaluate": aevaluate if is_async else evaluate,
            "fix": fix, "optimise": optimise, "redraw": redraw}


def _route_after_evaluate(state: EpisodeState) -> str:
    return state["phase"]


def _route_start(state: EpisodeState) -> str:
    """A fresh episode generates; a resumed one continues where its records stopped, through the
    follow-up node of its next phase."""
    if not state.get("attempts"):
        return "start"
    return state["phase"]


def build_graph(ep: Episode, *, is_async: bool = False, with_fix: bool = True, checkpointer: Any = None
                ) -> Any:
    """The standard graph for ``ep``: generate -> evaluate -> done, or (``with_fix``) a follow-up node
    per phase (fix, optimise, and redraw for ``generate``) -> generate."""
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(EpisodeState)
    nodes = _nodes(ep, is_async)
    graph.add_node("generate", nodes["generate"])
    graph.add_node("evaluate", nodes["evaluate"])
    targets: dict[str, str] = {"done": END}
    if with_fix:
        for phase, node in (("fix", "fix"), ("optimise", "optimise"), ("generate", "redraw")):
            graph.add_node(node, nodes[node])
            graph.add_edge(node, "generate")
            targets[phase] = node
    graph.add_conditional_edges(START, _route_start, {"start": "generate", **targets})
    graph.add_edge("generate", "evaluate")
    graph.add_conditional_edges("evaluate", _route_after_evaluate, targets)
    return graph.compile(checkpointer=checkpointer)


@LOOPS.register("one-shot", description="generate once, evaluate, end")
def one_shot(ep: Episode, *, is_async: bool = False, checkpointer: Any = None) -> Any:
    """generate -> evaluate -> end."""
    ep.options.update(single_turn=True)
    return build_graph(ep, is_async=is_async, with_fix=False, checkpointer=checkpointer)


@LOOPS.register("fix-retry", optimise=True, keep_optimising=False,
                description="generate, evaluate; fix with the verdict, or optimise once correct; "
                            "up to max_turns")
def fix_retry(ep: Episode, *, is_async: bool = False, checkpointer: Any = None, optimise: bool = True,
              keep_optimising: bool = False) -> Any:
    """generate -> evaluate -> done | fix (the verdict) | optimise (timing and instructions, once correct).

    ``optimise=False`` stops at the first correct candidate; ``keep_optimising=True`` goes on optimising
    after the environment calls the episode solved, until the turn budget is spent."""
    ep.options.update(optimise=optimise, keep_optimising=keep_optimising)
    return build_graph(ep, is_async=is_async, with_fix=True, checkpointer=checkpointer)


# -- running an episode ----------------------------------------------------------------------------
def _prepare(settings: EpisodeSettings, provider: Provider, env: KernelEnv | None,
             on_turn: Callable[[TurnRecord], None] | None, is_async: bool) -> tuple[Episode, Any, bool]:
    from warpgym.env import make

    spec = LOOPS[settings.loop]
    owns_env = env is None
    if env is None:
        env = make(settings.task, target=settings.target, device=settings.device,
                   max_turns=settings.max_turns)
    elif env.task.id != settings.task:
        raise ValueError(f"the environment is for task {env.task.id}, not {settings.task}")
    elif env.max_turns < settings.max_turns:
        raise ValueError(f"the environment allows {env.max_turns} turns, fewer than "
                         f"max_turns={settings.max_turns}")
    ep = Episode(task=env.task, loop=settings.loop, provider=provider, env=env, context=settings.context,
                 history=settings.history, sample=settings.sample, max_turns=settings.max_turns,
                 target=env.options.target, on_turn=on_turn, context_text=settings.context_text,
                 agent=settings.agent)
    args = {**spec.defaults, **settings.loop_args}
    graph = spec.build(ep, is_async=is_async, **args)
    return ep, graph, owns_env


def _resumed_state(ep: Episode, resume: list[TurnRecord] | None) -> EpisodeState:
    state = initial_state(ep)
    records = sorted(resume or [], key=lambda r: r.turn)
    for i, record in enumerate(records):
        if record.turn != i + 1:
            raise ValueError(f"resume records must be turns 1..n in order; found turn {record.turn} "
                             f"at position {i + 1}")
        if record.turn > ep.max_turns:
            raise ValueError(f"resume has turn {record.turn}, beyond max_turns={ep.max_turns}")
        ep.records.append(record)  # before the route sees it, as in a live turn
        state = {**state, **apply_record(ep, state, record)}
        if i + 1 < len(records):
            state = {**state, **followup(ep, state, records[i + 1].phase)}
    return state


def _result(ep: Episode) -> EpisodeResult:
    i = best_index([outcome_of(r.result, ep.baseline) for r in ep.records])
    best = None if i is None else ep.records[i]
    return EpisodeResult(task=ep.task.id, loop=ep.loop, provider=ep.provider.name, context=ep.context,
                         turns=list(ep.records), best=best, solved=any(r.terminated for r in ep.records),
                         sample=ep.sample, history=ep.history)


def _config(ep: Episode) -> dict[str, Any]:
    # The turn counter is the budget; the recursion limit only has to stay out of its way.
    return {"recursion_limit": 4 * ep.max_turns + 10,
            "configurable": {"thread_id": f"{ep.task.id}/{ep.name}/{ep.context}/{ep.sample}"}}


def _reset_options(ep: Episode) -> dict[str, Any]:
    """A loop that keeps optimising after a solved turn steps on past ``terminated``."""
    return {"continue_after_solved": bool(ep.options.get("keep_optimising"))}


def run_episode(settings: EpisodeSettings, *, provider: Provider, env: KernelEnv | None = None,
                on_turn: Callable[[TurnRecord], None] | None = None, resume: list[TurnRecord] | None = None
                ) -> EpisodeResult:
    """See ``warpgym.agents.api.run_episode``."""
    ep, graph, owns_env = _prepare(settings, provider, env, on_turn, is_async=False)
    try:
        ep.env.reset(seed=ep.sample, options=_reset_options(ep))
        state = _resumed_state(ep, resume)
        if state["phase"] != "done":
            graph.invoke(state, _config(ep))
        return _result(ep)
    finally:
        if owns_env:
            ep.env.close()


async def arun_episode(settings: EpisodeSettings, *, provider: Provider, env: KernelEnv | None = None,
                       on_turn: Callable[[TurnRecord], None] | None = None,
                       resume: list[TurnRecord] | None = None) -> EpisodeResult:
    """``run_episode`` for asyncio: the model call awaits ``provider.acomplete`` and the evaluation runs in a
    worker thread, so many episodes can share one event loop. Give concurrent episodes their own
    environments (or evaluators): one evaluator judges one candidate at a time."""
    ep, graph, owns_env = _prepare(settings, provider, env, on_turn, is_async=True)
    try:
        ep.env.reset(seed=ep.sample, options=_reset_options(ep))
        state = _resumed_state(ep, resume)
        if state["phase"] != "done":
            await graph.ainvoke(state, _config(ep))
        return _result(ep)
    finally:
        if owns_env:
            ep.env.close()
