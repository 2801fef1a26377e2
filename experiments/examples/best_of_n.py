"""Best-of-n with feedback: an agent strategy written outside warpgym, the way a user writes one.

The first ``n`` turns are independent drafts: each answers the task alone, with no other draft in
view. Then the episode carries on from the best draft (the correct one with the highest speedup, or,
while none is correct, the one that got furthest through the judge) with that draft's verdict as the
feedback, and from there fixes or optimises like fix-retry until the turn budget is spent. A draft
that solves the task ends the episode.

Name it in an experiment file (``best-of-n.toml`` beside this file)::

    [agents.best-of-2]
    loop = "best_of_n.py:best-of-n"      # FILE.py:LOOP, relative to the experiment file
    n = 2

It is built on the standard graph (``warpgym.agents.loops.build_graph``): the strategy is only where a
turn goes next (``Episode.route``) and what the next turn is shown (``Episode.prompt``). The runner
replays stored turns through the same two functions, so a stopped run of this loop resumes.
"""

from __future__ import annotations

from typing import Any

from warpgym.agents import LOOPS, TurnRecord
from warpgym.agents.best import best_index, outcome_of
from warpgym.agents.loops import Episode, EpisodeState, build_graph, standard_followup, standard_phase
from warpgym.env import STAGES


def furthest(ep: Episode, drafts: list[TurnRecord]) -> TurnRecord:
    """The draft to build on: the best correct one, else the one whose verdict came latest in the
    judge's stages (an answer with no code counts as before the first), the earliest on ties."""
    i = best_index([outcome_of(d.result, ep.baseline) for d in drafts])
    if i is not None:
        return drafts[i]

    def reached(d: TurnRecord) -> int:
        stage = (d.result or {}).get("stage")
        return STAGES.index(stage) if stage in STAGES else -1

    return max(drafts, key=reached)  # max keeps the first of equals


@LOOPS.register("best-of-n", n=3, optimise=True,
                description="n independent drafts, then fix or optimise the best one with its verdict")
def best_of_n(ep: Episode, *, is_async: bool = False, checkpointer: Any = None, n: int = 3,
              optimise: bool = True) -> Any:
    """``n`` drafts, then fix-retry from the best; ``optimise=False`` stops at the first correct kernel."""
    if n < 1:
        raise ValueError(f"best-of-n: n must be at least 1, not {n}")
    ep.options.update(optimise=optimise, keep_optimising=False)

    def route(ep: Episode, record: TurnRecord) -> str:
        if record.terminated:
            return "done"
        if record.turn < n:
            return "generate"
        if record.turn == n:
            return standard_phase(ep, furthest(ep, ep.records[:n]))
        return standard_phase(ep, record)

    def prompt(ep: Episode, state: EpisodeState, phase: str) -> list[dict[str, str]]:
        if phase == "generate" or state["turn"] != n:
            return standard_followup(ep, state, phase)["messages"]
        best = furthest(ep, ep.records[:n])  # the drafts are over: continue from the best one
        view = EpisodeState(**{**state, "attempts": [*state["attempts"], best.to_dict()],
                               "messages": [*state["messages"][:2],
                                            {"role": "assistant", "content": best.response}]})
        return standard_followup(ep, view, phase)["messages"]

    ep.route, ep.prompt = route, prompt
    return build_graph(ep, is_async=is_async, checkpointer=checkpointer)
