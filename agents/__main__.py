"""Play one episode from the command line and print what happened at each turn.

    python -m warpgym.agents math/add --loop fix-retry --provider openai:gpt-5 --context full
    python -m warpgym.agents math/add --provider replay:answers.jsonl --device cpu -v

``--record FILE`` appends every answer to a replay file, so the episode can be played again
offline (``--provider replay:FILE``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from warpgym.env.toolchain import targets

from .api import CONTEXT_LEVELS, HISTORY_MODES, LOOPS, EpisodeSettings, make_provider, run_episode
from .transcript import format_episode, format_turn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m warpgym.agents", description=__doc__.split("\n\n")[0])
    parser.add_argument("task", help="task id, e.g. math/add")
    parser.add_argument("--loop", default="fix-retry", choices=sorted(LOOPS))
    parser.add_argument("--provider", required=True, help="openai:MODEL, anthropic:MODEL, "
                        "openai-compatible:MODEL@URL or replay:PATH")
    parser.add_argument("--context", default="none", choices=CONTEXT_LEVELS)
    parser.add_argument("--history", default="full", choices=HISTORY_MODES)
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--sample", type=int, default=0)
    parser.add_argument("--target", default="sm_90a", choices=targets.NAMES)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--reasoning-effort", default=None)
    parser.add_argument("--thinking-budget", type=int, default=None)
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--no-cache", action="store_true", help="always call the model")
    parser.add_argument("--record", type=Path, default=None, help="append the answers to this replay file")
    parser.add_argument("--json", type=Path, default=None, help="write the EpisodeResult here")
    parser.add_argument("-v", "--verbose", action="store_true", help="print responses and feedback")
    args = parser.parse_args(argv)

    wanted = {"reasoning_effort": args.reasoning_effort, "thinking_budget": args.thinking_budget,
              "max_tokens": args.max_tokens, "record": args.record}
    params = {k: v for k, v in wanted.items() if v is not None}
    provider = make_provider(args.provider, use_cache=not args.no_cache, **params)
    detail = {"response": args.verbose, "feedback": args.verbose}
    settings = EpisodeSettings(task=args.task, loop=args.loop, context=args.context, max_turns=args.max_turns,
                               history=args.history, sample=args.sample, target=args.target,
                               device=args.device)
    result = run_episode(settings, provider=provider,
                         on_turn=lambda r: print(format_turn(r, **detail), flush=True))
    print(format_episode(result).splitlines()[-1])
    if args.json:
        args.json.write_text(json.dumps(result.to_dict(), indent=1))
    return 0 if result.solved else 1


if __name__ == "__main__":
    sys.exit(main())
