"""An on-disk cache of model answers, so that rerunning an experiment with the same settings costs
nothing and returns the same answers.

The key is a hash of everything that changes the answer: provider kind, model, endpoint, the
messages, the call parameters and the sample index (without the sample index, k samples of one
prompt would all be the first answer). One JSON file per entry, written atomically, so parallel
runners sharing a cache directory never read half a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any


def default_cache_dir() -> Path:
    env = os.environ.get("WARPGYM_CACHE_DIR")
    if env:
        return Path(env) / "responses"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "warpgym" / "responses"


def cache_key(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class ResponseCache:
    """``get(key)`` -> the stored completion dict or None; ``put(key, completion_dict)``.

    ``ttl_s`` makes entries older than that count as missing (None: kept for ever)."""

    def __init__(self, directory: Path | str | None = None, *, ttl_s: float | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.ttl_s = ttl_s

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        try:
            if self.ttl_s is not None and time.time() - path.stat().st_mtime > self.ttl_s:
                return None
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return entry.get("completion")

    def put(self, key: str, completion: dict[str, Any], request: dict[str, Any] | None = None) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"key": key, "created": time.time(), "completion": completion, "request": request}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(entry, f, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
