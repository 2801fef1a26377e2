"""A ``Doc`` as Markdown: ``report.md``, and what ``warpgym compare`` prints."""

from __future__ import annotations

from .report_doc import Doc, Table


def render(doc: Doc) -> str:
    out = [f"# {doc.title}", ""]
    for kind, value in doc.blocks:
        if kind == "h":
            out += ["#" * value[0] + " " + value[1], ""]
        elif kind == "p":
            out += [value, ""]
        elif kind == "list":
            out += [f"- {item}" for item in value] + [""]
        elif kind == "img":
            out += [f"![{value[1]}]({value[0]})", ""]
        elif kind == "html":
            if value[1]:
                out += [value[1], ""]
        elif kind == "table":
            t: Table = value
            align = t.alignment()
            out.append("| " + " | ".join(_cell(h) for h in t.headers) + " |")
            out.append("|" + "|".join(":---" if a == "l" else "---:" for a in align) + "|")
            out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in t.rows]
            out.append("")
    return "\n".join(out)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")
