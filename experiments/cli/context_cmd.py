"""``warpgym context``: the hardware documents' addressable sections, and a level's text before a run."""

from __future__ import annotations

import argparse
import math

from . import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("context", help="the hardware documents' sections; a context level's text")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    sections = verbs.add_parser("sections", help="every addressable part, with its estimated size")
    sections.add_argument("documents", nargs="*", metavar="DOC",
                          help="sm_90a, sm_100a, triton (default: all)")
    sections.set_defaults(func=run_sections)
    show = verbs.add_parser("show", help="the text a level of these parts puts in the system prompt")
    show.add_argument("parts", nargs="+", metavar="PART",
                      help="specs, sm_90a, sm_90a#tma, sm_90a#wgmma-examples, file:notes.md, ...")
    show.add_argument("--without", action="append", default=[], metavar="PART", help="leave a part out")
    show.add_argument("--target", default="sm_90a")
    show.add_argument("--language", default="triton", choices=("triton", "cuda"))
    show.set_defaults(func=run_show)


def run_sections(args: argparse.Namespace) -> int:
    from warpgym.prompts import library
    from warpgym.prompts.sections import section_names

    lib = library()
    names = args.documents or sorted(lib.documents)
    for name in names:
        if name not in lib.documents:
            raise UsageError(f"no document {name!r}; known: {', '.join(sorted(lib.documents))}")
        for part in section_names(name, lib.documents[name]):
            text = lib.render(lib.select([part]), "")
            if text:  # a half with nothing in it (a section without examples) is not listed
                print(f"{part:70} {math.ceil(len(text) / 4):>7,} tokens (est.)")
    return 0


def run_show(args: argparse.Namespace) -> int:
    from warpgym.prompts import level_text
    from warpgym.prompts.sections import UnknownPartError

    try:
        print(level_text(args.parts, args.target, args.language, tuple(args.without)), end="")
    except (UnknownPartError, KeyError) as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    return 0
