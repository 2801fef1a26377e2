"""Everything ``warpgym serve`` can be told, with the defaults a single trusted machine wants."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

TOKEN_ENV = "SERVE_BEARER_TOKEN"
"""Where the server (and the client) read the bearer token from. Not a ``WARPGYM_`` name: those pass
into the judge's workers, and the server removes this one from its environment once read."""
MIN_TOKEN_CHARS = 16


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    journal: Path = Path("warpgym-serve.sqlite")
    cache: bool = True
    """Answer a duplicate (same task, candidate, options) with the verdict already reached."""
    max_queue: int = 1024
    """Distinct evaluations waiting for a worker; past it a submission is answered 429."""
    max_batch: int = 1024
    max_body_bytes: int = 16 << 20
    max_timeout_s: float = 600.0
    """The longest per-request timeout a client may ask for."""
    max_wait_s: float = 60.0
    """The longest a poll may wait for its answer."""
    requests_per_s: float = 50.0
    request_burst: int = 200
    submissions_per_s: float = 200.0
    submission_burst: int = 2000
    attempts: int = 3
    """Tries per evaluation when the executor itself fails (a worker or actor lost)."""
    drain_s: float = 60.0
    """On SIGTERM: how long in-flight evaluations may take to finish before they are cancelled."""
    suites: dict[str, str] = field(default_factory=dict)
    """Imported suites by format (``--suite kernelbench=PATH``), on top of those ``warpgym tasks import``
    saved and ``WARPGYM_SUITE_<FORMAT>`` names."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check(settings: Settings) -> None:
    """The rules the server refuses to start without (ValueError with the reason)."""
    if settings.token is not None and len(settings.token) < MIN_TOKEN_CHARS:
        raise ValueError(f"the bearer token is {len(settings.token)} characters; use at least "
                         f"{MIN_TOKEN_CHARS}, e.g. from secrets.token_urlsafe(32)")
    if not is_loopback(settings.host) and not settings.token:
        raise ValueError(f"refusing to listen on {settings.host} without a bearer token: the server runs "
                         f"untrusted code for whoever can reach it. Set {TOKEN_ENV} or pass --token-file")
    for name in ("max_queue", "max_batch", "max_body_bytes", "request_burst", "submission_burst", "attempts"):
        if getattr(settings, name) < 1:
            raise ValueError(f"{name} must be at least 1")
    for name in ("max_timeout_s", "max_wait_s", "requests_per_s", "submissions_per_s"):
        if getattr(settings, name) <= 0:
            raise ValueError(f"{name} must be positive")
    if settings.max_batch > settings.submission_burst:
        raise ValueError(f"max_batch ({settings.max_batch}) must not exceed submission_burst "
                         f"({settings.submission_burst}): a batch that large could never pass")
    if settings.drain_s < 0:
        raise ValueError("drain_s must not be negative")
    if settings.suites:
        from warpgym.tasks.importers import ADAPTERS

        for fmt, path in settings.suites.items():
            if fmt not in ADAPTERS:
                raise ValueError(f"suite {fmt}={path}: unknown suite format {fmt!r}; importers: "
                                 f"{', '.join(sorted(ADAPTERS))}")
            if not Path(path).expanduser().exists():
                raise ValueError(f"suite {fmt}={path}: no such file or folder")
