"""A small on-disk cache for measurements worth keeping between runs (baseline timings).

Keys include everything that would change the figure: the task's code, the case, the device,
the driver, and the torch and Triton versions, so a stale entry is never read.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import inspect
import json
import os
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    """``$WARPGYM_CACHE_DIR`` (the agents' response cache lives there too), else ``~/.cache/warpgym``."""
    root = os.environ.get("WARPGYM_CACHE_DIR") or os.environ.get("WARPGYM_CACHE")
    return Path(root or os.path.join(os.path.expanduser("~"), ".cache", "warpgym"))


def fingerprint(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


def code_fingerprint(*fns: Any) -> str:
    """The source of the functions that produce a figure (a changed reference changes its key)."""
    texts = []
    for fn in fns:
        if fn is None:
            continue
        try:
            texts.append(inspect.getsource(fn))
        except (OSError, TypeError):
            texts.append(repr(fn))
    return fingerprint(texts)


def environment_fingerprint(device: str) -> dict[str, Any]:
    import torch
    import triton

    info: dict[str, Any] = {"torch": torch.__version__, "triton": triton.__version__, "device": device}
    if device.startswith("cuda"):
        info["name"] = torch.cuda.get_device_name(torch.device(device))
        info["capability"] = list(torch.cuda.get_device_capability(torch.device(device)))
        with contextlib.suppress(Exception):
            info["driver"] = torch._C._cuda_getDriverVersion()
    return info


class JsonCache:
    """One JSON file of key -> value, updated under a file lock (several processes may share it)."""

    def __init__(self, name: str, enabled: bool = True) -> None:
        self.path = cache_dir() / f"{name}.json"
        self.enabled = enabled and os.environ.get("WARPGYM_NO_CACHE") != "1"

    def _read(self) -> dict[str, Any]:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}

    def get(self, key: str) -> Any | None:
        return self._read().get(key) if self.enabled else None

    def put(self, key: str, value: Any) -> None:
        if not self.enabled:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path.with_suffix(".lock"), "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                data = self._read()
                data[key] = value
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text(json.dumps(data))
                os.replace(tmp, self.path)
        except OSError:
            pass  # a cache that cannot be written is only slower
