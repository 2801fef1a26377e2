"""Compiled modules and their kernels: a launch is checked against the kernel's parameters, launch
bounds, registers and the target's limits before anything reaches the GPU, then launched on the
current PyTorch stream. Without a GPU the checked launch is recorded and refused with NoDeviceError."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Sequence
from typing import Any

from warpgym.env.toolchain import driver
from warpgym.env.toolchain.errors import LaunchError, NoDeviceError
from warpgym.env.toolchain.registry import REGISTRY, LaunchRecord, ModuleRecord
from warpgym.env.toolchain.targets import TARGETS
from warpgym.env.toolchain.tensormap import TensorMap


def _dims(value: int | Sequence[int], what: str) -> tuple[int, int, int]:
    items = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(items) <= 3 or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise LaunchError(f"{what} must be an int or 1 to 3 ints, got {value!r}")
    items = tuple(items) + (1,) * (3 - len(items))
    if any(v < 1 for v in items):
        raise LaunchError(f"{what} {items} has a dimension below 1")
    return items  # type: ignore[return-value]


class Module:
    """A compiled module; ``kernel(name)`` gives a launchable kernel."""

    def __init__(self, record: ModuleRecord, lowered: dict[str, str], jit: bool = False) -> None:
        self.record = record
        self._lowered = lowered
        self._jit = jit
        self._handles: dict[Any, Any] = {}

    @property
    def names(self) -> list[str]:
        return list(self.record.kernels)

    def kernel(self, name: str) -> Kernel:
        symbol = self._lowered.get(name, name)
        if symbol not in self.record.kernels:
            raise LookupError(
                f"module {self.record.name!r} has no kernel {name!r}; it has "
                f'{", ".join(self.record.kernels) or "none"} (declare kernels extern "C" '
                "or pass their C++ names in name_expressions)"
            )
        return Kernel(self, symbol)

    def __getattr__(self, name: str) -> Kernel:
        if name.startswith("_") or name in ("record",):
            raise AttributeError(name)
        return self.kernel(name)

    def _function(self, symbol: str) -> Any:
        from cuda.bindings import driver as cu

        ctx = driver.current_context()
        key = (int(ctx), symbol)
        if key in self._handles:
            return self._handles[key]
        mod_key = (int(ctx), None)
        if mod_key not in self._handles:
            try:
                ptx, cubin = REGISTRY.image(self.record)
            except LookupError as exc:
                raise LaunchError(str(exc)) from exc
            image = ptx.encode() + b"\0" if self._jit or cubin is None else cubin
            try:
                self._handles[mod_key] = driver.check(cu.cuModuleLoadData(image), "cuModuleLoadData")
            except LaunchError as exc:
                raise LaunchError(
                    f"loading module {self.record.name!r} ({self.record.target}) on this GPU: {exc}"
                ) from exc
        function = cu.cuModuleGetFunction(self._handles[mod_key], symbol.encode())
        fn = driver.check(function, "cuModuleGetFunction")
        self._handles[key] = fn
        return fn


class Kernel:
    """One kernel: ``kernel(*args, grid=..., block=..., shared_mem=0, cluster=None)``."""

    def __init__(self, module: Module, symbol: str) -> None:
        self.module = module
        self.name = symbol
        self.info = module.record.kernels[symbol]
        self._smem_set = 0
        self._cluster_set = False

    def __repr__(self) -> str:
        return f"<kernel {self.name} of module {self.module.record.name} ({self.module.record.target})>"

    def check(
        self, grid: Any, block: Any, shared_mem: int = 0, cluster: Any = None
    ) -> tuple[tuple[int, int, int], tuple[int, int, int], tuple[int, int, int] | None]:
        """Refuse a launch that cannot work, with a reason, before anything reaches the GPU."""
        target = self.module.record.target
        limits = TARGETS[target]
        grid3, block3 = _dims(grid, "grid"), _dims(block, "block")
        if grid3[0] >= 2**31 or grid3[1] >= 65536 or grid3[2] >= 65536:
            raise LaunchError(f"grid {grid3} is too large (x < 2^31, y and z < 65536)")
        threads = block3[0] * block3[1] * block3[2]
        if threads > limits.max_threads_per_block or block3[2] > 64:
            raise LaunchError(
                f"block {block3} has {threads} threads; at most {limits.max_threads_per_block} per block "
                "(and z <= 64)"
            )
        info = self.info
        if info.reqntid is not None:
            want = tuple(info.reqntid) + (1,) * (3 - len(info.reqntid))
            if want[0] * want[1] * want[2] != threads:
                raise LaunchError(
                    f"{self.name} was compiled for exactly {want} threads per block (.reqntid), "
                    f"launched with {block3}"
                )
        if info.maxntid is not None:
            cap = (
                info.maxntid[0]
                * (info.maxntid[1] if len(info.maxntid) > 1 else 1)
                * (info.maxntid[2] if len(info.maxntid) > 2 else 1)
            )
            if threads > cap:
                raise LaunchError(
                    f"{self.name} was compiled for at most {cap} threads per block "
                    f"(__launch_bounds__ / .maxntid), launched with {threads}"
                )
        if info.registers is not None and info.registers * threads > limits.registers_per_sm:
            raise LaunchError(
                f"{self.name} uses {info.registers} registers per thread; {threads} threads need "
                f"{info.registers * threads}, more than the {limits.registers_per_sm} a multiprocessor has"
            )
        if not isinstance(shared_mem, int) or shared_mem < 0:
            raise LaunchError(f"shared_mem must be a non-negative int of bytes, got {shared_mem!r}")
        static = info.shared or 0
        limit = limits.max_shared_per_block
        if static + shared_mem > limit:
            raise LaunchError(
                f"{self.name} asks for {static + shared_mem} bytes of shared memory per block "
                f"({shared_mem} dynamic + {static} static); {target} allows at most {limit} "
                f"({limit // 1024} KB): use fewer pipeline stages or smaller tiles"
            )
        cluster3 = None
        if cluster is not None:
            cluster3 = _dims(cluster, "cluster")
            size = cluster3[0] * cluster3[1] * cluster3[2]
            if size > limits.max_cluster:
                raise LaunchError(
                    f"cluster {cluster3} has {size} blocks; at most {limits.max_cluster} "
                    f"({limits.portable_cluster} portable)"
                )
            for g, c, axis in zip(grid3, cluster3, "xyz", strict=True):
                if g % c:
                    raise LaunchError(f"grid {axis}={g} is not a multiple of cluster {axis}={c}")
        return grid3, block3, cluster3

    def pack(self, args: Sequence[Any]) -> list[bytes]:
        """Each argument as the bytes of its PTX parameter; wrong counts and types are errors."""
        import torch

        params = self.info.params
        if len(args) != len(params):
            raise LaunchError(
                f"{self.name} takes {len(params)} parameters "
                f"({', '.join(p.type + ('[' + str(p.size) + ']' if p.array else '') for p in params)}"
                f"), got {len(args)} arguments"
            )
        out = []
        for i, (arg, p) in enumerate(zip(args, params, strict=True)):
            where = f"{self.name} argument {i} ({p.type}{'[' + str(p.size) + ']' if p.array else ''})"
            if isinstance(arg, TensorMap):
                if not p.array or p.size != 128:
                    raise LaunchError(
                        f"{where}: a TensorMap goes to a 128-byte by-value parameter "
                        "(`const __grid_constant__ CUtensorMap` / `.param .align 64 .b8 p[128]`)"
                    )
                out.append(arg.data)
            elif isinstance(arg, torch.Tensor):
                if p.size != 8 or p.array:
                    raise LaunchError(
                        f"{where}: a tensor is passed as its 8-byte address; this parameter is not"
                    )
                if driver.gpu_available() and not arg.is_cuda:
                    raise LaunchError(f"{where}: the tensor is on {arg.device}; kernels read CUDA tensors")
                out.append(struct.pack("<Q", arg.data_ptr()))
            elif isinstance(arg, bytes | bytearray):
                if len(arg) != p.size:
                    raise LaunchError(f"{where}: {len(arg)} bytes given for a {p.size}-byte parameter")
                out.append(bytes(arg))
            elif isinstance(arg, bool | int) and not p.type.startswith("f"):
                if p.array:
                    raise LaunchError(f"{where}: an int was given for a {p.size}-byte aggregate parameter")
                bits = p.size * 8
                value = int(arg)
                if not -(1 << (bits - 1)) <= value < (1 << bits):
                    raise LaunchError(f"{where}: {value} does not fit in {bits} bits")
                out.append((value & ((1 << bits) - 1)).to_bytes(p.size, "little"))
            elif isinstance(arg, float) or (isinstance(arg, int) and p.type in ("f32", "f64")):
                if p.type == "f32":
                    out.append(struct.pack("<f", arg))
                elif p.type == "f64":
                    out.append(struct.pack("<d", arg))
                else:
                    raise LaunchError(f"{where}: a float was given for a {p.type} parameter")
            else:
                raise LaunchError(
                    f"{where}: cannot pass a {type(arg).__name__} (use tensors, ints, floats, "
                    "TensorMap or bytes)"
                )
        return out

    def __call__(
        self, *args: Any, grid: Any, block: Any, shared_mem: int = 0, cluster: Any = None, stream: Any = None
    ) -> None:
        grid3, block3, cluster3 = self.check(grid, block, shared_mem, cluster)
        if cluster3 is not None and TARGETS[self.module.record.target].capability[0] < 9:  # pragma: no cover
            raise LaunchError("thread-block clusters need sm_90 or newer")
        packed = self.pack(args)
        record = LaunchRecord(self.module.record.name, self.name, grid3, block3, shared_mem, cluster3, False)
        if not driver.gpu_available():
            REGISTRY.launched(record)
            raise NoDeviceError(
                f"{self.name}: no CUDA GPU on this machine; the module compiled for "
                f"{self.module.record.target} and the launch was checked, but it cannot run here"
            )
        self._launch(packed, grid3, block3, shared_mem, cluster3, stream)
        record.ran = True
        REGISTRY.launched(record)

    launch = __call__

    def _launch(
        self,
        packed: list[bytes],
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_mem: int,
        cluster: tuple[int, int, int] | None,
        stream: Any,
    ) -> None:
        import torch
        from cuda.bindings import driver as cu

        major, minor = torch.cuda.get_device_capability()
        limits = TARGETS[self.module.record.target]
        want = limits.capability
        if (major, minor) != want:
            raise LaunchError(
                f"module {self.module.record.name!r} was built for {self.module.record.target}; "
                f"this GPU is sm_{major}{minor}"
            )
        fn = self.module._function(self.name)
        attr = cu.CUfunction_attribute
        if shared_mem > limits.default_shared_limit and shared_mem > self._smem_set:
            driver.check(
                cu.cuFuncSetAttribute(fn, attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_mem),
                f"raising {self.name}'s dynamic shared memory to {shared_mem} bytes",
            )
            self._smem_set = shared_mem
        buffers = [ctypes.create_string_buffer(b, max(len(b), 1)) for b in packed]
        pointers = (ctypes.c_void_p * max(len(buffers), 1))(*[ctypes.addressof(b) for b in buffers])
        handle = stream if stream is not None else torch.cuda.current_stream().cuda_stream
        hstream = cu.CUstream(int(handle))
        if cluster is None:
            driver.check(
                cu.cuLaunchKernel(fn, *grid, *block, shared_mem, hstream, ctypes.addressof(pointers), 0),
                f"launching {self.name}",
            )
            return
        size = cluster[0] * cluster[1] * cluster[2]
        if size > limits.portable_cluster and not self._cluster_set:
            driver.check(
                cu.cuFuncSetAttribute(fn, attr.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                "allowing a non-portable cluster size",
            )
            self._cluster_set = True
        config = cu.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = grid
        config.blockDimX, config.blockDimY, config.blockDimZ = block
        config.sharedMemBytes = shared_mem
        config.hStream = hstream
        attribute = cu.CUlaunchAttribute()
        attribute.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attribute.value.clusterDim.x, attribute.value.clusterDim.y, attribute.value.clusterDim.z = cluster
        config.attrs = [attribute]
        config.numAttrs = 1
        driver.check(cu.cuLaunchKernelEx(config, fn, ctypes.addressof(pointers), 0), f"launching {self.name}")
