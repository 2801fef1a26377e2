"""warpgym.prompts: the words the agents send, kept apart from the code that sends them.

Templates (Jinja2, ``templates/``) for the system, task, feedback and optimise messages, each with
a Triton and a CUDA/PTX variant where they differ; hardware context at three levels (``none``,
``specs``: the target's numbers and instruction families, ``full``: also the documents in
``documents/``). Every code example in the documents is compiled by a test for its target, so
a model is never shown an example that does not build.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .specs import SPECS, TargetSpec, spec_for

TEMPLATES_DIR = Path(__file__).parent / "templates"
DOCUMENTS_DIR = Path(__file__).parent / "documents"
CONTEXT_LEVELS: tuple[str, ...] = ("none", "specs", "full")
"""Hardware context in the prompt: nothing, the device's numbers and features, or also the documents.
The one definition: the agents and the experiment files take theirs from here."""
EXAMPLE_LANGUAGES = ("cuda", "ptx", "python")


@functools.lru_cache(maxsize=1)
def _environment() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )


def template_name(kind: str, language: str) -> str:
    """``optimise`` + ``cuda`` -> ``optimise_cuda.j2`` when it exists, else ``optimise.j2``."""
    specific = f"{kind}_{language}.j2"
    return specific if (TEMPLATES_DIR / specific).exists() else f"{kind}.j2"


def render(kind: str, language: str = "triton", **variables: Any) -> str:
    return _environment().get_template(template_name(kind, language)).render(**variables).strip() + "\n"


def document(name: str) -> str:
    """A hardware document by name: ``sm_90a``, ``sm_100a`` or ``triton``."""
    path = DOCUMENTS_DIR / f"{name}.md"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in DOCUMENTS_DIR.glob("*.md")))
        raise KeyError(f"no document {name!r}; known: {known}")
    return path.read_text()


def documents_for(target: str, language: str) -> list[str]:
    """The documents of the ``full`` level: the target's, then Triton's mapping for Triton tasks."""
    names = [target] + (["triton"] if language == "triton" else [])
    return [n for n in names if (DOCUMENTS_DIR / f"{n}.md").exists()]


def builtin_parts(level: str, target: str, language: str) -> list[str]:
    """A built-in level as parts (``prompts.sections``): what ``hardware_context`` renders."""
    if level not in CONTEXT_LEVELS:
        raise ValueError(f"unknown hardware-context level {level!r}; use one of {CONTEXT_LEVELS}")
    if level == "none":
        return []
    return ["specs"] + (documents_for(target, language) if level == "full" else [])


def library(base_dir: Path | None = None) -> Any:
    """Every built-in document as addressable parts; ``file:`` parts are found relative to ``base_dir``."""
    from .sections import Library

    return Library({p.stem: p.read_text() for p in sorted(DOCUMENTS_DIR.glob("*.md"))}, base_dir)


def level_text(parts: list[str], target: str, language: str = "triton", without: tuple[str, ...] = (),
               base_dir: Path | None = None) -> str:
    """A context level's text from its parts (less ``without``): see ``prompts.sections``."""
    lib = library(base_dir)
    return lib.render(lib.select(parts, without), render("specs", language, spec=spec_for(target)))


def hardware_context(target: str, level: str, language: str = "triton") -> str:
    """The hardware-context prompt component; empty at level ``none``."""
    if level not in CONTEXT_LEVELS:
        raise ValueError(f"unknown hardware-context level {level!r}; use one of {CONTEXT_LEVELS}")
    if level == "none":
        return ""
    parts = [render("specs", language, spec=spec_for(target)).strip()]
    if level == "full":
        parts += [document(name).strip() for name in documents_for(target, language)]
    return "\n\n".join(parts) + "\n"


LOADER_API = ("load_cuda", "load_ptx", "attachment", "tensor_map", "default_target", "Module.kernel",
              "Kernel.__call__")
"""The loader functions a candidate calls; their signatures and first doc paragraphs go in the prompt."""


def _signature(obj: Any) -> str:
    """A signature with its annotations resolved (``str``, not ``'str'``) where they can be."""
    for eval_str in (True, False):
        try:
            text = str(inspect.signature(obj, eval_str=eval_str))
        except Exception:  # unresolvable annotation names, builtins without signatures
            continue
        text = re.sub(r"<class '([\w.]+)'>", r"\1", text)
        return text.replace("typing.", "").replace("collections.abc.", "")
    return "(...)"


def loader_doc() -> str:
    """The CUDA/PTX loader's own documentation (module docstring and the signatures a candidate uses), so
    the prompt describes the API that really exists rather than a copy that drifts."""
    try:
        module = importlib.import_module("warpgym.loader")
    except Exception:  # not built, or broken: the prompt then names the module only
        return ""
    lines = [(module.__doc__ or "").strip()]
    api = []
    for dotted in LOADER_API:
        obj: Any = module
        for part in dotted.split("."):
            obj = getattr(obj, part, None)
        if obj is None:
            continue
        signature = _signature(obj).replace("self, ", "").replace("(self)", "()")
        signature = signature.replace(f"{module.__name__}.", "")
        owner = getattr(module, dotted.split(".")[0]) if dotted.endswith(".__call__") else obj
        doc = (inspect.getdoc(owner) or "").split("\n\n")[0].replace("\n", " ")
        name = dotted.replace(".__call__", "")
        api.append(f"- `{name}{signature}`" + (f": {doc}" if doc else ""))
    if api:
        lines.append("API (from warpgym import loader):\n" + "\n".join(api))
    return "\n\n".join(line for line in lines if line)


# -- the messages --------------------------------------------------------------------------------
def system_prompt(*, language: str, target: str, entrypoint: str, context: str = "none",
                  hardware: str | None = None) -> str:
    """``hardware``: a level's rendered text (a level of the experiment file's); else the built-in
    level ``context``."""
    text = hardware if hardware is not None else hardware_context(target, context, language)
    return render("system", language, target=target, spec=spec_for(target), entrypoint=entrypoint,
                  hardware=text.strip(),
                  loader_doc=loader_doc() if language == "cuda" else "")


def task_prompt(*, statement: str, target: str, entrypoint: str, language: str = "triton",
                device: str | None = None) -> str:
    return render("task", language, statement=statement.strip(), target=target, entrypoint=entrypoint,
                  device=device)


def feedback_prompt(*, turn: int, max_turns: int, feedback: str = "", extraction_problem: str | None = None,
                    best: dict[str, Any] | None = None, language: str = "triton") -> str:
    return render("feedback", language, turn=turn, max_turns=max_turns, feedback=feedback.strip(),
                  extraction_problem=extraction_problem, best=best, turns_left=max_turns - turn)


def optimise_prompt(*, turn: int, max_turns: int, feedback: str, target: str, reward: float | None = None,
                    best: dict[str, Any] | None = None, language: str = "triton") -> str:
    return render("optimise", language, turn=turn, max_turns=max_turns, feedback=feedback.strip(),
                  reward=reward, best=best, target=target, turns_left=max_turns - turn)


# -- examples in the documents -------------------------------------------------------------------
@dataclass(frozen=True)
class DocExample:
    """A code example in a document: ``language`` cuda (CUDA C++ for NVRTC), ptx (for ptxas) or python
    (Triton kernels for ``triton.compile``); ``targets`` it must build for."""

    document: str
    name: str
    language: str
    targets: tuple[str, ...]
    code: str
    line: int


_FENCE_OPEN = re.compile(r"^```(?P<lang>[A-Za-z0-9_+-]*)(?P<attrs>[^\n]*)$")


def document_blocks(name: str) -> list[tuple[str, dict[str, str], str, int]]:
    """(language, attributes, code, line) of every fenced block of a document."""
    lines = document(name).splitlines()
    out: list[tuple[str, dict[str, str], str, int]] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        attrs = dict(re.findall(r"(\w+)=(\S+)", m.group("attrs")))
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        out.append((m.group("lang"), attrs, "\n".join(lines[i + 1:j]) + "\n", i + 1))
        i = j + 1
    return out


def document_examples(name: str) -> list[DocExample]:
    """The compilable examples of a document (blocks in cuda, ptx or python; every such block must name
    itself with ``example=NAME`` and its ``target=sm_90a[,sm_100a]``)."""
    examples = []
    for lang, attrs, code, line in document_blocks(name):
        if lang not in EXAMPLE_LANGUAGES:
            continue
        if "example" not in attrs or "target" not in attrs:
            raise ValueError(f"documents/{name}.md:{line}: a {lang} block must carry example=NAME "
                             "target=TARGET")
        targets = tuple(attrs["target"].split(","))
        examples.append(DocExample(name, attrs["example"], lang, targets, code, line))
    return examples


__all__ = [
    "CONTEXT_LEVELS", "DOCUMENTS_DIR", "LOADER_API", "SPECS", "TEMPLATES_DIR", "DocExample", "TargetSpec",
    "builtin_parts", "document", "document_blocks", "document_examples", "documents_for", "feedback_prompt",
    "hardware_context", "level_text", "library", "loader_doc", "optimise_prompt", "render", "spec_for",
    "system_prompt", "task_prompt",
]
