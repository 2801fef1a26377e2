"""The server's counters and latencies, written in Prometheus' text format (``GET /metrics``).

GPU utilisation comes from NVML (``pip install nvidia-ml-py``), imported on the first scrape; without
it, or without a driver, those lines are left out and a comment says why.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import defaultdict, deque
from typing import Any

BUCKETS = (0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
"""Upper bounds (seconds) of the latency histograms: from a cache hit to a cold GPU evaluation."""
WINDOW_S = 60.0


class Histogram:
    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(BUCKETS, value)] += 1
        self.sum += value
        self.count += 1


def _labels(pairs: dict[str, str]) -> str:
    if not pairs:
        return ""
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(pairs.items()))
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    return repr(float(value)) if value != int(value) else str(int(value))


class Telemetry:
    """Thread-safe counters (by label), latency histograms by stage, and recent evaluation times."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counters: dict[str, dict[tuple[tuple[str, str], ...], float]] = defaultdict(dict)
        self.stages: dict[str, Histogram] = defaultdict(Histogram)
        self.recent: deque[float] = deque()
        self.started_monotonic = time.monotonic()
        self._nvml: Any = None
        self._nvml_problem: str | None = None

    def count(self, name: str, amount: float = 1, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self.lock:
            series = self.counters[name]
            series[key] = series.get(key, 0) + amount

    def total(self, name: str, **labels: str) -> float:
        with self.lock:
            return sum(v for k, v in self.counters[name].items() if set(labels.items()) <= set(k))

    def observe(self, stage: str, seconds: float) -> None:
        with self.lock:
            self.stages[stage].observe(max(seconds, 0.0))

    def evaluated(self, now: float | None = None) -> None:
        """One evaluation finished (for the per-minute rate)."""
        now = time.monotonic() if now is None else now
        with self.lock:
            self.recent.append(now)
            self._trim(now)

    def per_minute(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        with self.lock:
            self._trim(now)
            span = min(WINDOW_S, now - self.started_monotonic)
            return len(self.recent) * 60.0 / max(span, 1.0)

    def _trim(self, now: float) -> None:
        while self.recent and self.recent[0] < now - WINDOW_S:
            self.recent.popleft()

    # ------------------------------------------------------------------ the text format
    def render(self, gauges: dict[str, tuple[str, float]], counters: dict[str, tuple[str, float]],
               gpus: bool = True) -> str:
        """Every metric: ``gauges`` and ``counters`` (name -> (help, value)) read from the service now,
        then this object's counters and histograms, then the GPUs."""
        lines: list[str] = []

        def head(name: str, kind: str, text: str) -> None:
            lines.append(f"# HELP {name} {text}")
            lines.append(f"# TYPE {name} {kind}")

        for name, (text, value) in gauges.items():
            head(name, "gauge", text)
            lines.append(f"{name} {_number(value)}")
        for name, (text, value) in counters.items():
            head(name, "counter", text)
            lines.append(f"{name} {_number(value)}")
        head("warpgym_serve_evaluations_per_minute", "gauge", "evaluations finished in the last minute")
        lines.append(f"warpgym_serve_evaluations_per_minute {_number(round(self.per_minute(), 3))}")
        with self.lock:
            counters_now = {n: dict(s) for n, s in self.counters.items()}
            stages = {s: (list(h.counts), h.sum, h.count) for s, h in self.stages.items()}
        for name, series in sorted(counters_now.items()):
            head(name, "counter", COUNTER_HELP.get(name, name))
            for labels, value in sorted(series.items()):
                lines.append(f"{name}{_labels(dict(labels))} {_number(value)}")
        name = "warpgym_serve_stage_seconds"
        head(name, "histogram", "seconds per stage of a submission: queue (waiting for a worker), evaluation "
                                "(on the worker, server side), and the judge's own stages")
        for stage, (counts, total, count) in sorted(stages.items()):
            running = 0
            for bound, n in zip((*BUCKETS, float("inf")), counts, strict=True):
                running += n
                le = "+Inf" if bound == float("inf") else _number(bound)
                lines.append(f'{name}_bucket{{le="{le}",stage="{stage}"}} {running}')
            lines.append(f'{name}_sum{{stage="{stage}"}} {_number(round(total, 6))}')
            lines.append(f'{name}_count{{stage="{stage}"}} {count}')
        if gpus:
            lines.extend(self._gpu_lines())
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ NVML
    def _gpu_lines(self) -> list[str]:
        nvml = self._nvml_handle()
        if nvml is None:
            return [f"# GPU utilisation not reported: {self._nvml_problem}"]
        lines = ["# HELP warpgym_serve_gpu_utilization_percent GPU busy time in NVML's last sample period",
                 "# TYPE warpgym_serve_gpu_utilization_percent gauge"]
        memory = ["# HELP warpgym_serve_gpu_memory_used_bytes GPU memory in use",
                  "# TYPE warpgym_serve_gpu_memory_used_bytes gauge"]
        try:
            for index in range(nvml.nvmlDeviceGetCount()):
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                rates = nvml.nvmlDeviceGetUtilizationRates(handle)
                used = nvml.nvmlDeviceGetMemoryInfo(handle).used
                lines.append(f'warpgym_serve_gpu_utilization_percent{{gpu="{index}"}} {rates.gpu}')
                memory.append(f'warpgym_serve_gpu_memory_used_bytes{{gpu="{index}"}} {used}')
        except Exception as exc:  # noqa: BLE001 - a GPU fallen off the bus must not break the scrape
            return [f"# GPU utilisation not reported: NVML: {exc}"]
        return lines + memory

    def _nvml_handle(self) -> Any:
        if self._nvml is not None or self._nvml_problem is not None:
            return self._nvml
        try:
            import pynvml
        except ImportError:
            self._nvml_problem = "nvidia-ml-py is not installed (pip install nvidia-ml-py)"
            return None
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # noqa: BLE001 - no driver (a CPU machine): report why, once
            self._nvml_problem = f"NVML did not start ({exc})"
            return None
        self._nvml = pynvml
        return pynvml


COUNTER_HELP = {
    "warpgym_serve_submissions_total": "submissions accepted, by how they were answered: queued (a "
                                       "new evaluation), joined (the same evaluation already waiting or "
                                       "running), cached (a verdict already known)",
    "warpgym_serve_rejected_total": "requests refused, by reason",
    "warpgym_serve_evaluations_total": "evaluations finished, by outcome",
    "warpgym_serve_retries_total": "evaluations run again after the executor failed (a worker or actor lost)",
}


def outcome(result: dict[str, Any], server_error: bool) -> str:
    """A verdict's label in ``warpgym_serve_evaluations_total``."""
    if server_error:
        return "server_error"
    if result.get("correct") is True:
        return "correct"
    if result.get("stage") == "static":
        return "rejected"
    if not result.get("compiled"):
        return "not_compiled"
    return "incorrect" if result.get("correct") is False else "not_checked"
