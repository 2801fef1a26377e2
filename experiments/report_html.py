"""A ``Doc`` as one self-contained HTML page (plots inlined), and the every-turn block only HTML shows.

The page carries its own style and its images as data URIs, so ``report.html`` can be mailed or
archived alone.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from typing import Any

from .report_doc import Doc, Table
from .store import Store


def render(doc: Doc, base: Path) -> str:
    """The page; image paths are read relative to ``base``."""
    body = [f"<h1>{html.escape(doc.title)}</h1>"]
    for kind, value in doc.blocks:
        if kind == "h":
            body.append(f"<h{value[0]}>{html.escape(value[1])}</h{value[0]}>")
        elif kind == "p":
            body.append(f"<p>{_inline(value)}</p>")
        elif kind == "list":
            body.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in value) + "</ul>")
        elif kind == "img":
            data = base64.b64encode((base / value[0]).read_bytes()).decode()
            body.append(
                f'<figure><img alt="{html.escape(value[1])}" src="data:image/png;base64,{data}">'
                f"<figcaption>{html.escape(value[1])}</figcaption></figure>"
            )
        elif kind == "html":
            body.append(value[0])
        elif kind == "table":
            t: Table = value
            align = t.alignment()
            head = "".join(f"<th>{html.escape(h)}</th>" for h in t.headers)
            rows = "".join(
                "<tr>"
                + "".join(
                    f'<td class="{"l" if align[i] == "l" else "r"}">{html.escape(c)}</td>'
                    for i, c in enumerate(row)
                )
                + "</tr>"
                for row in t.rows
            )
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
    return HTML_PAGE.format(title=html.escape(doc.title), body="\n".join(body))


def _inline(text: str) -> str:
    """Markdown's `code` and **bold** in a paragraph, as HTML."""
    out = html.escape(text)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)


HTML_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em;
       color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; }}
th {{ background: #f3f3f3; }}
td.r {{ text-align: right; font-variant-numeric: tabular-nums; }}
td.l {{ text-align: left; }}
tbody tr:nth-child(even) {{ background: #fafafa; }}
code {{ background: #f3f3f3; padding: 0 0.2em; }}
img {{ max-width: 100%; }}
figcaption {{ color: #666; font-size: 0.85em; }}
details {{ margin: 0.3em 0; }}
details > summary {{ cursor: pointer; }}
pre {{ background: #f7f7f7; padding: 0.5em; overflow-x: auto; font-size: 0.85em; }}
</style></head><body>
{body}
</body></html>
"""


DETAIL_EPISODES = 300


def turn_details(store: Store) -> str:
    """One collapsible block per episode: each turn's verdict, feedback and answer, as the model saw them."""
    esc = html.escape
    records: dict[int, list[dict[str, Any]]] = {}
    for episode_id, record in store.all_turn_records():
        records.setdefault(episode_id, []).append(record)
    parts = []
    episodes = store.episodes()
    for e in episodes[:DETAIL_EPISODES]:
        turns = records.get(e["id"], [])
        verdicts = [_verdict(r) for r in turns]
        title = (
            f"{e['task']} · {e['agent']} · {e['model']} · context={e['context']} · "
            f"sample {e['sample']}: " + (" → ".join(verdicts) or "no turn yet")
        )
        inner = []
        for r, verdict in zip(turns, verdicts, strict=True):
            feedback = (r.get("feedback") or r.get("extraction_problem") or "")[:6000]
            inner.append(
                f"<h4>Turn {r['turn']} ({esc(str(r.get('phase')))}): {esc(verdict)}</h4>"
                f"<pre>{esc(feedback)}</pre>"
                "<details><summary>the answer</summary>"
                f"<pre>{esc((r.get('response') or '')[:20000])}</pre></details>"
            )
        parts.append(f"<details><summary>{esc(title)}</summary>{''.join(inner)}</details>")
    if len(episodes) > DETAIL_EPISODES:
        more = len(episodes) - DETAIL_EPISODES
        parts.append(f"<p>... and {more} more episodes (see warpgym export).</p>")
    return "\n".join(parts)


def _verdict(record: dict[str, Any]) -> str:
    res = record.get("result") or {}
    if res.get("correct"):
        speedups = (res.get("speedup") or {}).items()
        speedup = [f"{k} {v:.2f}x" for k, v in speedups if isinstance(v, int | float)]
        return "correct" + (f" ({', '.join(speedup)})" if speedup else "")
    if res.get("compiled"):
        return "wrong"
    if not res:
        return "no code"
    return f"failed at {res.get('stage', '?')}"
