"""The compile stage: the kernels a candidate built, compiled for the target and counted.

Triton kernels are compiled offline for the target with the launch signatures seen at run time (or,
on a GPU of the target's architecture, read from Triton's JIT); CUDA/PTX modules are the ones the
candidate built through the loader, dry-run on a CPU up to their first launch.
"""

from __future__ import annotations

import base64
import re
from typing import TYPE_CHECKING, Any

import torch
from warpgym.env.judge.cache import fingerprint
from warpgym.env.judge.channel import ask, call_inputs
from warpgym.env.judge.findings import host_compute, torch_ops
from warpgym.env.judge.instructions import FAMILIES, count_cubin, count_ptx
from warpgym.env.judge.pool import WorkerError
from warpgym.env.judge.result import KernelReport
from warpgym.env.protocol import messages as m
from warpgym.env.protocol.violations import violation
from warpgym.env.toolchain.targets import for_capability

if TYPE_CHECKING:
    from warpgym.env.judge.evaluation import Evaluation

PRINTF = re.compile(r"\bvprintf\b")
"""A device printf in PTX (Triton's ``device_print``, CUDA's ``printf``): a call to ``vprintf``."""
MAX_COMPILED = 512


def compile(ev: Evaluation) -> bool:
    """Compile and count what the candidate launched so far; False when that failed (recorded)."""
    if ev.task.language == "cuda":
        return compile_cuda(ev)
    if ev.task.language != "triton":
        return True
    if ev.extensions and not extension_kernels(ev):
        return False
    result, options = ev.result, ev.options
    if native_target(ev.device) == options.target:
        return jit_kernels(ev)
    try:
        reply: m.SpecsReply = ask(ev.workers.run, m.SpecsRequest(targets=[options.target]), 60)
    except WorkerError as exc:
        result.compile_errors.append(f"recording launches: {exc}")
        return False
    result.compile_errors.extend(reply.errors)
    if reply.refused:
        ev.flag("uncompiled-kernel", reason=reply.refused[0])
        return False
    if not reply.specs:
        return not result.compile_errors
    # The attachments are part of what was compiled: a module may read them at import.
    candidate = ev.candidate.to_dict()
    keys = [fingerprint(candidate, spec) for spec in reply.specs]
    compiled = ev.caches.compiled
    todo = [spec for key, spec in zip(keys, reply.specs, strict=True) if key not in compiled]
    if todo:
        from warpgym.env.judge.channel import load_request

        try:
            ask(ev.workers.compile, load_request(ev, mode="compile"), options.limits.load)
            done: m.KernelsReply = ask(ev.workers.compile, m.CompileRequest(specs=todo),
                                       options.limits.compile)
        except WorkerError as exc:
            result.compile_errors.append(f"compiling for {options.target}: {exc}")
            return False
        for spec, kernel in zip(todo, done.kernels, strict=False):
            compiled.put(fingerprint(candidate, spec), kernel.model_dump())
    add_kernels(ev, [k for k in (compiled.get(key) for key in keys) if k is not None])
    return not result.compile_errors


def extension_kernels(ev: Evaluation) -> bool:
    """The kernels of the CUDA extensions the candidate built (``load_inline``), with their instruction
    counts: its own kernels, beside any Triton ones."""
    try:
        reply: m.ModulesReply = ask(ev.workers.run, m.ModulesRequest(), 60)
    except WorkerError as exc:
        ev.result.compile_errors.append(f"reading the extensions' kernels: {exc}")
        return False
    add_modules(ev, [mod for mod in reply.modules if mod.language == "cuda-extension"])
    return not ev.result.compile_errors


def native_target(device: str) -> str | None:
    """The target Triton's JIT compiles for on this device (sm_90a on an H100/H200), if any."""
    if not device.startswith("cuda"):
        return None
    major, minor = torch.cuda.get_device_capability(torch.device(device))
    return for_capability(major, minor)


def jit_kernels(ev: Evaluation) -> bool:
    """On a GPU of the target's architecture, the kernels that ran are the ones to inspect."""
    try:
        reply: m.KernelsReply = ask(ev.workers.run, m.JitKernelsRequest(), 60)
    except WorkerError as exc:
        ev.result.compile_errors.append(f"reading the compiled kernels: {exc}")
        return False
    add_kernels(ev, [{**k.model_dump(), "target": ev.options.target} for k in reply.kernels])
    return not ev.result.compile_errors


def add_kernels(ev: Evaluation, kernels: list[dict[str, Any]]) -> None:
    result = ev.result
    known = {(k.name, k.target) for k in result.kernels}
    for kernel in kernels:
        if not kernel["ok"] and kernel.get("refused"):
            ev.flag("uncompiled-kernel", reason=kernel["error"].removeprefix("LaunchRefused: "))
        if not kernel["ok"]:
            result.compile_errors.append(f"{kernel['kernel']} for {kernel['target']}:\n{kernel['error']}")
            continue
        if (kernel["name"], kernel["target"]) in known:
            continue
        if PRINTF.search(kernel["ptx"]):
            ev.flag("kernel-print", kernel=kernel["name"])
        known.add((kernel["name"], kernel["target"]))
        ptx_counts = count_ptx(kernel["ptx"])
        sass_counts: dict[str, int] = {}
        try:
            per_fn = count_cubin(base64.b64decode(kernel["cubin"]))
            for counts in per_fn.values():
                for fam, n in counts.items():
                    sass_counts[fam] = sass_counts.get(fam, 0) + n
        except RuntimeError as exc:
            unread = {"": f"SASS of {kernel['name']}: {exc}"}
            result.skipped_checks.append(unread[""])
        else:
            unread = {}
        result.kernels.append(KernelReport(
            name=kernel["name"], target=kernel["target"],
            families={fam: {"ptx": ptx_counts.get(fam, 0), "sass": sass_counts.get(fam, 0)}
                      for fam in FAMILIES},
            shared_bytes=kernel.get("shared"), sass_unread=unread))


def _dry_run(ev: Evaluation) -> bool:
    """On a CPU: the entrypoint up to its first launch, so modules it builds at call time are compiled."""
    task, result = ev.task, ev.result
    case = task.cases("dev")[0]  # small: the dry run builds its inputs on the CPU
    request = m.DryRunRequest(inputs=call_inputs(ev, case, task.seeds[0], task.distributions[0], "cpu"))
    try:
        reply: m.DryRunReply = ask(ev.workers.run, request, ev.options.limits.compile)
    except WorkerError as exc:
        result.compile_errors.append(f"dry run of the entrypoint: {exc}")
        return False
    host_compute(ev, reply.forbidden_ops)
    torch_ops(ev, reply.forbidden_ops)
    if not reply.ok:
        if reply.kind in ("compile", "launch"):
            result.compile_errors.append(reply.error or "")
            return False
        last = ((reply.error or "").strip().splitlines() or [""])[-1][:300]
        result.skipped_checks.append("the entrypoint could not run on CPU tensors up to its first kernel "
                                     f"launch, so modules it builds at call time were not analysed: {last}")
    elif not reply.reached_launch:
        result.skipped_checks.append("the entrypoint returned on CPU tensors without launching a kernel")
    return True


def compile_cuda(ev: Evaluation) -> bool:
    """The modules a CUDA/PTX candidate built through the loader: reports and instruction counts.

    Modules built at import are there already; on a CPU the entrypoint is also dry-run up to its
    first launch, so modules built at call time are compiled too and that launch is checked.
    """
    result = ev.result
    if ev.cuda_on_cpu and not result.compiled and not _dry_run(ev):
        return False
    try:
        reply: m.ModulesReply = ask(ev.workers.run, m.ModulesRequest(), 60)
    except WorkerError as exc:
        result.compile_errors.append(f"reading the compiled modules: {exc}")
        return False
    if not reply.modules:
        result.violations.append(violation("no-loader-module"))
        return False
    add_modules(ev, reply.modules)
    return not result.compile_errors

def add_modules(ev: Evaluation, modules: list[Any]) -> None:
    """Each module's kernels as the candidate's, one report per kernel name; a module built for another
    target is an error."""
    result, target = ev.result, ev.options.target
    reports = {(k.name, k.target): k for k in result.kernels}
    for position, module in enumerate(modules):
        if module.target != target:
            result.compile_errors.append(f"module {module.name!r} was built for {module.target}; this "
                                         f"evaluation targets {target} (omit target= or use "
                                         "loader.default_target())")
            continue
        build = f"{position}:{module.name}"
        for k in module.kernels:
            families = {fam: {"ptx": k.ptx.get(fam, 0), "sass": k.sass.get(fam, 0)} for fam in FAMILIES}
            report = reports.get((k.name, module.target))
            if report is None:
                spills = None if k.spill_stores is None else k.spill_stores + (k.spill_loads or 0)
                report = reports[(k.name, module.target)] = KernelReport(
                    name=k.name, target=module.target, families=families, registers=k.registers,
                    shared_bytes=k.shared, spills=spills, warnings=module.warnings, builds=[build])
                result.kernels.append(report)
            elif build not in report.builds:
                report.builds.append(build)
                for fam, counts in families.items():
                    held = report.families.setdefault(fam, {"ptx": 0, "sass": 0})
                    for side, n in counts.items():
                        held[side] = max(held.get(side, 0), n)
            if module.analysis_error:
                report.sass_unread[build] = f"SASS of module {module.name}: {module.analysis_error}"
        if module.analysis_error:
            result.skipped_checks.append(f"SASS of module {module.name}: {module.analysis_error}")
