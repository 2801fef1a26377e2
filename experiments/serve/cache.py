"""What a verdict depends on, so a duplicate submission is judged once and answered from what is known.

The key covers the task (its id and what it is: ``tasks.fingerprint``, so a server restarted with another
suite that uses the same ids, or with a task edited under one version, never answers from the old one),
the module's source and its attachments, every option the client chose, and what the server judges on
(device kind and name, warpgym's version): a journal kept across an upgrade or moved to another machine
never answers with a verdict reached elsewhere.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from .models import Submission

SERVER_ERROR = "the server could not evaluate this candidate"
"""How a verdict the server made up after its workers failed begins (``runtime_error``); never reused."""


def candidate_hash(source: str, attachments: dict[str, str]) -> str:
    blob = json.dumps([source, sorted(attachments.items())], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def verdict_key(submission: Submission, where: str, judged: Any, task_print: str) -> str:
    """The task's id and ``task_print`` (its ``task_fingerprint``), the candidate's hash, the options,
    ``where`` (the server's device and version) and ``judged``: the ``EvalOptions`` the judge is given,
    with what the server sets itself (the paired timing and its traced sample), so a server whose judge
    settings changed under one version never answers with a verdict reached under the old ones."""
    settings = dataclasses.asdict(judged) if dataclasses.is_dataclass(judged) else judged
    blob = json.dumps([
        where, submission.task, task_print, candidate_hash(submission.source, submission.attachments),
        submission.options.model_dump(mode="json"), settings,
    ], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def reusable(result: dict[str, Any]) -> bool:
    """Whether a verdict may answer a later duplicate: not when the server, rather than the judge, gave
    up on it (workers lost), nor when the harness ran out of GPU memory (memory other evaluations held),
    since a later attempt may well succeed."""
    return (not str(result.get("runtime_error") or "").startswith(SERVER_ERROR)
            and result.get("harness_failure") != "OutOfMemoryError")
