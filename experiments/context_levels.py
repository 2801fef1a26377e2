"""Hardware-context levels of the experiment file's own, and the ablation grids built from parts.

A level is a list of parts (``prompts.sections``): ``specs``, a document, a section of one
(``sm_90a#tma``), a half of a section (``sm_90a#wgmma-examples``) or ``file:PATH``. An ``[ablate]``
table names a base level (built-in or the file's own) and parts; ``leave-one-out`` makes one level per
part with that part removed from the base, ``add-one-in`` one level per part added to it. The built-in
``none``/``specs``/``full`` keep their meaning (``full`` holds the Triton document only for Triton
tasks). Every level's text is rendered once per task language when a run starts and stored with it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

LEVELS_FILE = "contexts.json"
CHARS_PER_TOKEN = 4
"""The estimate of a level's size in tokens before any model has read it: characters / 4. The report's
tokens per episode are the providers' own counts."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LevelSpec(_Strict):
    """``[context_levels.NAME]``: the parts shown, in order."""

    parts: list[str] = Field(min_length=1)
    description: str = ""


class Ablation(_Strict):
    """``[ablate]``: levels generated from a base and a list of parts."""

    base: str
    parts: list[str] = Field(min_length=1)
    mode: Literal["leave-one-out", "add-one-in"] = "leave-one-out"


@dataclass(frozen=True)
class Level:
    """A level resolved: a built-in base or parts of its own, plus parts added, less parts removed."""

    name: str
    builtin: str | None = None
    parts: tuple[str, ...] = ()
    plus: tuple[str, ...] = ()
    minus: tuple[str, ...] = ()
    base: str | None = None
    """The level this one was generated from (an ablation's), else None."""

    def parts_for(self, target: str, language: str) -> list[str]:
        from warpgym.prompts import builtin_parts

        parts = builtin_parts(self.builtin, target, language) if self.builtin else list(self.parts)
        return [*parts, *(p for p in self.plus if p not in parts)]


def generated_name(base: str, mode: str, part: str) -> str:
    return f"{base}{'-' if mode == 'leave-one-out' else '+'}{part}"


def levels(contexts: list[str], own: dict[str, LevelSpec], ablate: Ablation | None) -> dict[str, Level]:
    """Every level the experiment plays, by name, in the order of ``contexts`` then the ablation's."""
    from warpgym.prompts import CONTEXT_LEVELS

    def base_level(name: str) -> Level:
        if name in own:
            return Level(name, parts=tuple(own[name].parts))
        if name in CONTEXT_LEVELS:
            return Level(name, builtin=name)
        raise KeyError(name)

    out: dict[str, Level] = {}
    for name in contexts:
        if name in own or name in CONTEXT_LEVELS:
            out[name] = base_level(name)
    if ablate is not None and (ablate.base in own or ablate.base in CONTEXT_LEVELS):
        base = base_level(ablate.base)
        out.setdefault(ablate.base, base)
        for part in ablate.parts:
            name = generated_name(ablate.base, ablate.mode, part)
            change = {"minus": (part,)} if ablate.mode == "leave-one-out" else {"plus": (part,)}
            out.setdefault(name, Level(name, base.builtin, base.parts, base=ablate.base, **change))
    return out


def context_names(data: dict[str, Any]) -> list[str]:
    """The level names an experiment file's ``contexts`` may use: built-in, its own, generated."""
    from warpgym.prompts import CONTEXT_LEVELS

    own = data.get("context_levels")
    names = [*CONTEXT_LEVELS, *(own if isinstance(own, dict) else {})]
    ablate = data.get("ablate")
    if isinstance(ablate, dict) and isinstance(ablate.get("parts"), list):
        mode = ablate.get("mode", "leave-one-out")
        names += [generated_name(str(ablate.get("base")), mode, str(p)) for p in ablate["parts"]]
    return names


def problems(data: dict[str, Any], target: str, base_dir: Path | None,
             add: Callable[..., None]) -> None:
    """Every part that names nothing, every level that is empty after leaving a part out, each at its
    line; a level of the file's own may not take a built-in name."""
    from warpgym.prompts import CONTEXT_LEVELS, library
    from warpgym.prompts.sections import UnknownPartError

    lib = library(base_dir)
    own = data.get("context_levels") if isinstance(data.get("context_levels"), dict) else {}
    for name, spec in own.items():
        if name in CONTEXT_LEVELS:
            add(("context_levels", name), f"{name!r} is a built-in level; give yours another name")
        parts = spec.get("parts") if isinstance(spec, dict) else None
        for i, part in enumerate(parts if isinstance(parts, list) else []):
            try:
                lib.check(str(part))
            except UnknownPartError as exc:
                add(("context_levels", name, "parts", i), str(exc), part)
    ablate = data.get("ablate")
    if not isinstance(ablate, dict):
        return
    base = ablate.get("base")
    if isinstance(base, str) and base not in own and base not in CONTEXT_LEVELS:
        add(("ablate", "base"), f"unknown base level {base!r}; use a built-in level or one of "
            "[context_levels]", base)
        return
    parts = ablate.get("parts") if isinstance(ablate.get("parts"), list) else []
    mode = ablate.get("mode", "leave-one-out")
    for i, part in enumerate(parts):
        try:
            lib.check(str(part))
        except UnknownPartError as exc:
            add(("ablate", "parts", i), str(exc), part)
            continue
        if mode != "leave-one-out" or not isinstance(base, str):
            continue
        level = Level(base, builtin=base if base in CONTEXT_LEVELS else None,
                      parts=tuple(own.get(base, {}).get("parts", [])) if base in own else ())
        for language in ("triton", "cuda"):
            try:
                lib.select(level.parts_for(target, language), (str(part),))
                break
            except UnknownPartError:
                continue
        else:
            add(("ablate", "parts", i), f"{part!r} is not part of the base level {base!r}", part)


@dataclass
class Rendered:
    """A level's text for one task language, and its size."""

    text: str
    chars: int = field(init=False)
    tokens_estimate: int = field(init=False)

    def __post_init__(self) -> None:
        self.chars = len(self.text)
        self.tokens_estimate = math.ceil(self.chars / CHARS_PER_TOKEN)


def render_all(plan: dict[str, Level], target: str, languages: Iterable[str],
               base_dir: Path | None) -> dict[str, dict[str, Rendered]]:
    from warpgym.prompts import hardware_context, level_text

    def text(level: Level, lang: str) -> str:
        if level.builtin and not level.plus and not level.minus:
            return hardware_context(target, level.builtin, lang)
        return level_text(level.parts_for(target, lang), target, lang, level.minus, base_dir)

    return {name: {lang: Rendered(text(level, lang)) for lang in sorted(set(languages))}
            for name, level in plan.items()}


def store(run_dir: Path, plan: dict[str, Level], rendered: dict[str, dict[str, Rendered]]) -> None:
    """``contexts.json`` in the run: each level's definition and text per language, so the run's prompts
    can be rebuilt from its directory alone."""
    data = {
        name: {
            "builtin": level.builtin, "parts": list(level.parts), "plus": list(level.plus),
            "minus": list(level.minus), "base": level.base,
            "languages": {lang: {"text": r.text, "chars": r.chars, "tokens_estimate": r.tokens_estimate}
                          for lang, r in rendered[name].items()},
        }
        for name, level in plan.items()
    }
    path = run_dir / LEVELS_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def load(run_dir: Path) -> dict[str, dict[str, Any]]:
    path = run_dir / LEVELS_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def text_for(stored: dict[str, dict[str, Any]], level: str, language: str) -> str | None:
    """The stored text of ``level`` for ``language``; None for a built-in level with no stored text."""
    entry = stored.get(level, {}).get("languages", {}).get(language)
    return None if entry is None else entry["text"]
