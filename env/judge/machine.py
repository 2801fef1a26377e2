"""The GPU's state while it is timed: SM clock, power, temperature and clock-event (throttle) reasons,
sampled through NVML (``nvidia-ml-py``) from the judge's process during every timing window.

A timing is only as repeatable as the clock it ran at. An H200 under load runs at its power cap (a
software power cap reason is its normal state), so that reason is recorded and not flagged; any other
reason that lowers the clock (thermal or hardware slowdown, a power brake, sync boost) is flagged in
the result: that window's figures may not repeat. Where NVML is absent (no driver, a CPU machine, the
package not installed) the state says "not sampled" and why; timing goes on without it.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
from collections.abc import Iterator
from typing import Any

from warpgym.env.judge.result import MachineState

SAMPLE_SECONDS = 0.02
"""Between samples in a window (one sample costs tens of microseconds of NVML calls)."""

REASONS = {
    0x1: "gpu idle", 0x2: "applications clocks setting", 0x4: "software power cap",
    0x8: "hardware slowdown", 0x10: "sync boost", 0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown", 0x80: "hardware power brake slowdown", 0x100: "display clock setting",
}
"""NVML's clock event reason bits (nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*)."""
FLAGGED = 0x8 | 0x10 | 0x20 | 0x40 | 0x80
"""Reasons that slow the clock other than the power cap (idle and settings are not slowdowns)."""

_INIT: list[Any] = []
"""The NVML module once initialised in this process, or the reason it could not be."""
_INIT_LOCK = threading.Lock()


def nvml_module() -> tuple[Any, str | None]:
    """pynvml, initialised once per process, or (None, why not)."""
    with _INIT_LOCK:
        if not _INIT:
            try:
                import pynvml
            except ImportError:
                _INIT.append("nvidia-ml-py is not installed")
            else:
                try:
                    pynvml.nvmlInit()
                    _INIT.append(pynvml)
                except Exception as exc:  # noqa: BLE001 - NVMLError or a missing library: not sampled, said why
                    _INIT.append(f"NVML could not start: {exc}")
    found = _INIT[0]
    return (None, found) if isinstance(found, str) else (found, None)


def device_handle(nvml: Any, index: int) -> Any:
    """NVML's handle for torch's CUDA device ``index``: by UUID (CUDA_VISIBLE_DEVICES renumbers devices,
    NVML does not), else by the machine's index of that GPU."""
    try:
        import torch

        return nvml.nvmlDeviceGetHandleByUUID(f"GPU-{torch.cuda.get_device_properties(index).uuid}")
    except Exception:  # noqa: BLE001 - no CUDA here, or an old torch without uuid: fall back on the index
        from warpgym.env.common.device import physical_gpu

        return nvml.nvmlDeviceGetHandleByIndex(int(physical_gpu(index)))


class Sampler:
    """Samples one GPU's state; ``running()`` samples in a thread for as long as its body runs."""

    def __init__(self, device_index: int, nvml: Any = None) -> None:
        self.reason: str | None = None
        self.nvml = nvml
        if self.nvml is None:
            self.nvml, self.reason = nvml_module()
        self.handle = None
        if self.nvml is not None:
            try:
                self.handle = device_handle(self.nvml, device_index)
            except Exception as exc:  # noqa: BLE001 - no handle: not sampled, said why
                self.reason = f"NVML has no handle for device {device_index}: {exc}"
        self.clocks: list[float] = []
        self.power: list[float] = []
        self.temperature: list[float] = []
        self.reasons = 0
        self.samples = 0
        self.power_limit = self._read(lambda n, h: n.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0)

    def _read(self, get: Any) -> Any:
        if self.handle is None:
            return None
        try:
            return get(self.nvml, self.handle)
        except Exception:  # noqa: BLE001 - a quantity this GPU does not report is left out
            return None

    def sample(self) -> None:
        if self.handle is None:
            return
        readings = (
            (self.clocks, self._read(lambda n, h: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM))),
            (self.power, self._read(lambda n, h: n.nvmlDeviceGetPowerUsage(h) / 1000.0)),
            (self.temperature,
             self._read(lambda n, h: n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU))),
        )
        for values, value in readings:
            if value is not None:
                values.append(float(value))
        reasons = self._read(_event_reasons)
        if reasons is not None:
            self.reasons |= int(reasons)
        self.samples += 1

    @contextlib.contextmanager
    def running(self) -> Iterator[Sampler]:
        """Samples now, every SAMPLE_SECONDS in a thread while the body runs, and once at its end."""
        if self.handle is None:
            yield self
            return
        stop = threading.Event()

        def loop() -> None:
            while not stop.wait(SAMPLE_SECONDS):
                self.sample()

        self.sample()
        thread = threading.Thread(target=loop, name="warpgym-nvml-sampler", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()
            self.sample()

    def state(self) -> MachineState:
        if self.handle is None or not self.samples:
            return MachineState(sampled=False, reason=self.reason or "no sample was taken")
        seen = [name for bit, name in REASONS.items() if self.reasons & bit]
        return MachineState(
            sampled=True, samples=self.samples, sm_clock_mhz=_spread(self.clocks),
            power_w=_spread(self.power), temperature_c=_spread(self.temperature),
            power_limit_w=self.power_limit, reasons=seen,
            flagged=[name for bit, name in REASONS.items() if self.reasons & bit & FLAGGED])


def _event_reasons(nvml: Any, handle: Any) -> int:
    get = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    return get(handle)


def _spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}
