"""What the GPU ran during one checked call: CUDA activity tracing (CUPTI, through torch's profiler).

Host-code rules can be dodged in ways nobody has thought of yet; the device cannot. Inside the traced
window every kernel launch, memory copy and memset that reached the GPU is recorded with its name and
size, whoever issued it (the candidate, a library it reached, another thread). The judge compares the
kernels with the ones the candidate built (env/judge/device_evidence.py); this side only records.

The window is bracketed by two sentinel kernels the worker launches itself. Both must appear in the
record: a candidate that stops the profiler, or swaps it for another, loses the closing sentinel, and
the judge says the trace was interrupted rather than trusting a partial record.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from warpgym.env.common.kernel_names import HARNESS_KERNELS, is_fill

SENTINEL_CYCLES = 1000
"""Length of each sentinel (``torch.cuda._sleep``, ATen's spin kernel): about a microsecond."""
SENTINEL_NAME = "spin_kernel"
MAX_UNORDERED = 8
OVERLAP_SLACK_US = 2.0
"""Overlap with a spin below this (or below half a spin as short as a sentinel) is the clocks' jitter,
not two streams."""
MAX_ACTIVITIES = 4096
"""Distinct activities (kind, name, direction) one call may record; a call past it is not traced (an
error the judge refuses), so nothing can hide behind a long list."""

_PROFILE = torch.profiler.profile
_ACTIVITY = torch.profiler.ProfilerActivity.CUDA
_SLEEP = torch.cuda._sleep
_SYNC = torch.cuda.synchronize


@dataclass
class Activity:
    kind: str
    """``kernel``, ``memcpy`` or ``memset``."""
    name: str
    nbytes: int = 0
    """All the bytes these activities moved (copies and memsets)."""
    copy: str = ""
    """For a memcpy: ``HtoD``, ``DtoH``, ``DtoD``, ``HtoH`` or ``PtoP``, as CUPTI names the direction."""
    count: int = 1
    us: float = 0.0
    """Their total duration on the device, in microseconds."""

    def to_wire(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name[:400], "nbytes": int(self.nbytes), "copy": self.copy,
                "count": self.count, "us": round(self.us, 3)}


@dataclass
class Trace:
    activities: list[Activity] = field(default_factory=list)
    """One entry per distinct (kind, name, direction), with how often it ran, in order of first run."""
    sentinels: int = 0
    """Sentinel kernels seen: 2 when the whole window was traced (with a timed block's spins, more)."""
    unordered: list[str] = field(default_factory=list)
    """Kernels that ran, at least in part, while one of the worker's spin kernels ran (a sentinel, or
    the spin before a timed call): work the call's stream did not order after its start, or still
    running at its end, on another stream. Distinct names, at most MAX_UNORDERED."""
    error: str | None = None
    seconds: float = 0.0
    busy_us: float = 0.0
    """Microseconds in which at least one kernel that computes ran: the union of their intervals, leaving
    out the worker's spins and scrub and ATen's fill (the poison before a timed call is one). The device
    time of the work, whatever the streams: the judge sets a call's timed milliseconds against it."""

    def to_wire(self) -> dict[str, Any]:
        return {"activities": [a.to_wire() for a in self.activities], "sentinels": self.sentinels,
                "unordered": [n[:400] for n in self.unordered], "error": self.error, "seconds": self.seconds,
                "busy_us": round(self.busy_us, 3)}


_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}


def _copy_direction(name: str) -> str:
    for direction in ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP"):
        if direction in name:
            return direction
    return ""


def read_chrome_trace(data: dict[str, Any]) -> Trace:
    """The device activities of a profiler's Chrome trace (``traceEvents``), in the order recorded:
    kernels, memory copies (with their bytes and direction) and memsets; and the kernels that overlapped
    one of the worker's spins in time (``Trace.unordered``)."""
    trace = Trace()
    seen: dict[tuple[str, str, str], Activity] = {}
    events = [e for e in data.get("traceEvents", []) if isinstance(e, dict) and e.get("cat") in _CATEGORIES]
    events.sort(key=lambda e: float(e.get("ts") or 0))
    spins: list[tuple[float, float]] = []
    others: list[tuple[float, float, str]] = []
    for event in events:
        kind, name = _CATEGORIES[event["cat"]], str(event.get("name", ""))
        start = float(event.get("ts") or 0)
        span = (start, start + float(event.get("dur") or 0))
        if kind == "kernel" and SENTINEL_NAME in name:
            trace.sentinels += 1
            spins.append(span)
            continue
        if kind == "kernel":
            others.append((*span, name))
        key = (kind, name, _copy_direction(name) if kind == "memcpy" else "")
        nbytes = int((event.get("args") or {}).get("bytes") or 0)
        duration = float(event.get("dur") or 0)
        if key in seen:
            seen[key].count += 1
            seen[key].nbytes += nbytes
            seen[key].us += duration
        elif len(seen) < MAX_ACTIVITIES:
            seen[key] = Activity(kind, name, nbytes, key[2], us=duration)
        else:
            trace.error = f"the call ran more than {MAX_ACTIVITIES} distinct kernels and copies"
    trace.activities = list(seen.values())
    trace.unordered = overlapping(others, spins)
    trace.busy_us = busy_us([(start, end) for start, end, name in others
                             if not is_fill(name) and name not in HARNESS_KERNELS])
    return trace


def busy_us(spans: list[tuple[float, float]]) -> float:
    """The length of the union of ``spans``: kernels that overlap (other streams) count once."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end <= reach:
            continue
        total += end - max(start, reach)
        reach = end
    return total


def overlapping(kernels: list[tuple[float, float, str]], spins: list[tuple[float, float]]) -> list[str]:
    """Names of the kernels whose [start, end) meets a spin's: on one stream a kernel runs strictly before
    or after the spin, so an overlap is a kernel on a stream the call's did not wait for."""
    names: list[str] = []
    for start, end, name in kernels:
        if name in names:
            continue
        if any(min(end, s_end) - max(start, s_start) > min(OVERLAP_SLACK_US, (s_end - s_start) / 2)
               for s_start, s_end in spins):
            names.append(name)
            if len(names) >= MAX_UNORDERED:
                break
    return names


class traced:
    """Context manager: trace the GPU's activity for the block; ``.trace`` holds it after the block."""

    def __init__(self, directory: str | None = None) -> None:
        self.trace = Trace()
        self._directory = directory
        self._profile: Any = None
        self._started = 0.0

    def __enter__(self) -> traced:
        self._started = time.perf_counter()
        _SYNC()
        try:
            self._profile = _PROFILE(activities=[_ACTIVITY], acc_events=True)
            self._profile.__enter__()
        except Exception as exc:  # noqa: BLE001 - no tracing is reported, never a crash
            self._profile = None
            self.trace.error = f"CUDA activity tracing could not start: {type(exc).__name__}: {exc}"[:500]
            return self
        _SLEEP(SENTINEL_CYCLES)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._profile is None:
            return
        try:
            _SLEEP(SENTINEL_CYCLES)
            _SYNC()
            self._profile.__exit__(None, None, None)
            path = os.path.join(self._directory or tempfile.gettempdir(), f"device-trace-{os.getpid()}.json")
            try:
                self._profile.export_chrome_trace(path)  # written elsewhere, then renamed: read by path
                with open(path) as file:
                    self.trace = read_chrome_trace(json.load(file))
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        except Exception as error:  # noqa: BLE001 - a broken trace is the judge's to read, not a crash
            self.trace.error = f"CUDA activity tracing failed: {type(error).__name__}: {error}"[:500]
        self.trace.seconds = time.perf_counter() - self._started
