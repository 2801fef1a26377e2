"""What one client process of the many-clients test does (a module of its own, light to import)."""

from __future__ import annotations

from typing import Any

from warpgym.experiments.serve.client import ServeClient, item


def submit_and_stream(url: str, task: str, sources: list[str], one_by_one: bool) -> list[dict[str, Any]]:
    """Submit ``sources`` (one request each, or one batch), then read one stream of their answers.
    Returns what was accepted and every line the stream gave, for the parent to count."""
    with ServeClient(url, busy_timeout_s=300) as client:
        if one_by_one:
            accepted = [client.submit(task, s) for s in sources]
        else:
            accepted = client.submit_batch([item(task, s) for s in sources])
        ids = [a["id"] for a in accepted]
        lines = list(client.stream(ids))
    return [{"id": i, "source": s, "accepted": a, "lines": [ln for ln in lines if ln["id"] == i]}
            for i, s, a in zip(ids, sources, accepted, strict=True)]
