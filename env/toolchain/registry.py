"""What a candidate built: every module with its PTX, cubin, compiler log, warnings and per-kernel
report, and every launch it made. The worker reads ``REGISTRY`` and sends ``modules_report()`` to the
harness, so the judge sees each module however the candidate reached the loader."""

from __future__ import annotations

import copy
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from warpgym.env.toolchain.errors import trim
from warpgym.env.toolchain.ptx import Param


@dataclass
class KernelInfo:
    """What the compiler says about one kernel of a module."""

    name: str
    params: list[Param] = field(default_factory=list)
    registers: int | None = None
    shared: int | None = None
    """Static shared memory, bytes."""
    spill_stores: int | None = None
    spill_loads: int | None = None
    stack: int | None = None
    barriers: int | None = None
    reqntid: tuple[int, ...] | None = None
    maxntid: tuple[int, ...] | None = None
    ptx_counts: dict[str, int] = field(default_factory=dict)
    sass_counts: dict[str, int] = field(default_factory=dict)

    @property
    def spills(self) -> int | None:
        if self.spill_stores is None and self.spill_loads is None:
            return None
        return (self.spill_stores or 0) + (self.spill_loads or 0)


@dataclass
class ModuleRecord:
    """One module a candidate built: sources, binaries, and the compiler's report."""

    name: str
    language: str
    """``cuda`` (NVRTC) or ``ptx``."""
    target: str
    ptx: str
    cubin: bytes | None
    log: str = ""
    warnings: list[str] = field(default_factory=list)
    kernels: dict[str, KernelInfo] = field(default_factory=dict)
    options: list[str] = field(default_factory=list)
    compiler: str = ""
    seconds: float = 0.0
    sass: str | None = None
    analysis_error: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """Plain data for the worker's reply (the cubin stays behind; the SASS counts go along)."""
        return {
            "name": self.name,
            "language": self.language,
            "target": self.target,
            "log": trim(self.log, 8000),
            "warnings": self.warnings,
            "options": self.options,
            "compiler": self.compiler,
            "seconds": self.seconds,
            "ptx_chars": len(self.ptx),
            "cubin_bytes": len(self.cubin or b""),
            "analysis_error": self.analysis_error,
            "kernels": [
                {
                    "name": k.name,
                    "registers": k.registers,
                    "shared": k.shared,
                    "spill_stores": k.spill_stores,
                    "spill_loads": k.spill_loads,
                    "stack": k.stack,
                    "barriers": k.barriers,
                    "params": [p.type + (f"[{p.size}]" if p.array else "") for p in k.params],
                    "ptx": k.ptx_counts,
                    "sass": k.sass_counts,
                }
                for k in self.kernels.values()
            ],
        }


@dataclass
class LaunchRecord:
    module: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int
    cluster: tuple[int, int, int] | None
    ran: bool


@dataclass
class Registry:
    """Every module built and every launch made in this process (the harness reads it)."""

    modules: list[ModuleRecord] = field(default_factory=list)
    launches: list[LaunchRecord] = field(default_factory=list)
    launch_count: int = 0
    keep_launches: int = 256
    reports: list[dict[str, Any]] = field(default_factory=list)
    """Each module's report as it stood when built, before the candidate held the module: what the harness
    is sent, whatever is done to the record (its counts, its ``to_wire``) afterwards."""
    images: dict[int, tuple[str, bytes | None]] = field(default_factory=dict)
    """Each module's PTX and cubin as built, by its record: what is loaded onto the GPU."""

    def add(self, record: ModuleRecord) -> None:
        self.modules.append(record)
        self.reports.append(copy.deepcopy(ModuleRecord.to_wire(record)))
        self.images[id(record)] = (record.ptx, record.cubin)

    def image(self, record: ModuleRecord) -> tuple[str, bytes | None]:
        """The PTX and cubin ``record`` was built with; only a module built through the loader is loaded, so
        whatever reaches the GPU is what the report counted."""
        if id(record) not in self.images:  # kept with ``modules``, which holds the record: its id is its own
            raise LookupError(f"module {record.name!r} was not built by load_cuda or load_ptx")
        return self.images[id(record)]

    def launched(self, launch: LaunchRecord) -> None:
        self.launch_count += 1
        ORDER.add(launch.kernel)
        if len(self.launches) < self.keep_launches:
            self.launches.append(launch)

    def clear(self) -> None:
        self.modules.clear()
        self.launches.clear()
        self.launch_count = 0
        self.reports.clear()
        self.images.clear()


@dataclass
class LaunchOrder:
    """The kernel names of this process's launches in order, Triton's and the loader's together (the last
    ``keep``): the blocks Nsight Compute prints for a call are matched against that call's launches."""

    keep: int = 512
    names: deque[str] = field(default_factory=deque)
    total: int = 0

    def add(self, name: str) -> None:
        self.names.append(name)
        if len(self.names) > self.keep:
            self.names.popleft()
        self.total += 1

    def since(self, total: int) -> list[str] | None:
        """The names launched since the count stood at ``total``; None when not all of them are kept."""
        made = self.total - total
        if made > len(self.names):
            return None
        return list(self.names)[len(self.names) - made:] if made else []


ORDER = LaunchOrder()
REGISTRY = Registry()


def modules_report() -> list[dict[str, Any]]:
    """What the worker sends the harness: every module built in this process."""
    return copy.deepcopy(REGISTRY.reports)
