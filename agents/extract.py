"""Reading a model's answer: find the one candidate module in it, or say why there is none.

Models wrap code in Markdown fences, sometimes several times (a draft, then a fix), sometimes
truncated by the token limit, sometimes not at all. The rule: take the complete Python block
that defines the entrypoint; if none does, the last complete Python block. Two different blocks
that both define the entrypoint are ambiguous, and a problem text goes back to the model rather
than a guess going to the judge.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3", "triton"})
_FENCE = re.compile(r"^(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language tag, body, and whether its closing fence was seen."""

    language: str
    code: str
    complete: bool
    start_line: int


@dataclass(frozen=True)
class Extraction:
    """The candidate module (``code``), or ``problem``: a message written for the model."""

    code: str | None
    problem: str | None = None
    blocks: int = 0
    note: str | None = None
    """How the code was chosen when there was a choice (for the researcher, not the model)."""

    @property
    def ok(self) -> bool:
        return self.code is not None


def fenced_blocks(text: str) -> list[Block]:
    """Every fenced block in ``text``, in order; a block still open at the end is incomplete."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group("fence")
        language = m.group("info").strip().split()[0].lower() if m.group("info").strip() else ""
        body: list[str] = []
        j = i + 1
        closed = False
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) <= {fence[0]}:
                closed = True
                break
            body.append(lines[j])
            j += 1
        blocks.append(Block(language, "\n".join(body).strip("\n") + "\n", closed, i + 1))
        i = j + 1
    return blocks


def defines(code: str, name: str) -> bool:
    """Whether ``code`` defines a top-level function ``name`` (parsed; a regex when it does not parse,
    so that a module with a syntax error still counts and the judge reports the error)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return re.search(rf"^(async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) is not None
    return any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name
               for node in tree.body)


def _normalised(code: str) -> str:
    return "\n".join(line.rstrip() for line in code.strip().splitlines())


def extract_candidate(text: str, entrypoint: str) -> Extraction:
    """The candidate module in a model's answer, or the problem to tell the model."""
    blocks = fenced_blocks(text or "")
    python = [b for b in blocks if b.language in PYTHON_TAGS]
    complete = [b for b in python if b.complete]
    if not blocks:
        stripped = (text or "").strip()
        if stripped and defines(stripped, entrypoint):
            try:
                ast.parse(stripped)
            except SyntaxError:
                pass
            else:
                return Extraction(stripped + "\n", blocks=0, note="no fences: the whole answer is the module")
        return Extraction(None, (
            "Your answer contained no code. Reply with the complete Python module in one ```python fenced "
            f"block that defines `{entrypoint}`."), blocks=0)
    if not complete:
        if python:
            return Extraction(None, (
                "Your answer was cut off inside a code block (the closing ``` is missing), probably at the "
                "output-token limit. Reply with the complete module in one ```python block, shorter if need "
                "be."), blocks=len(blocks))
        langs = ", ".join(sorted({b.language or "untagged" for b in blocks}))
        return Extraction(None, (
            f"Your answer had code blocks ({langs}) but no Python block. The candidate is one Python module "
            f"(kernel sources go inside it as strings if needed) in a ```python block that defines "
            f"`{entrypoint}`."), blocks=len(blocks))
    defining = [b for b in complete if defines(b.code, entrypoint)]
    distinct = {_normalised(b.code) for b in defining}
    if len(distinct) > 1:
        return Extraction(None, (
            f"Your answer has {len(distinct)} different Python blocks that each define `{entrypoint}`, "
            "so it is not clear which one to judge. Reply with exactly one complete module in one "
            "```python block."),
            blocks=len(blocks))
    if defining:
        chosen = defining[-1]
        note = None if len(complete) == 1 else (
            f"took the block at line {chosen.start_line}, the one of {len(complete)} that defines "
            f"{entrypoint}")
        return Extraction(chosen.code, blocks=len(blocks), note=note)
    chosen = complete[-1]
    return Extraction(chosen.code, blocks=len(blocks),
                      note=f"no block defines {entrypoint}; took the last complete Python block")
