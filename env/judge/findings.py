"""What a worker's reply says about how the outputs were made, beyond their values: the violations a
run or a timing loop shows (host compute, patched harness functions, threads left running, writes
past the inputs, outputs no kernel wrote)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from warpgym.env.protocol import messages as m
from warpgym.env.protocol.violations import CODES, Violation, violation

if TYPE_CHECKING:
    from warpgym.env.judge.evaluation import Evaluation

HOST_PREFIX = "host: "
OUTPUT_CODES = {"output": "output-type", "output-layout": "output-layout",
                "output-alias": "output-aliases-input", "output-reused": "output-reused"}
"""A run reply's kind for outputs that break the contract, and the violation it is."""


def tampered(ev: Evaluation, names: list[str]) -> None:
    ev.result.violations.append(violation("tampering", names=", ".join(names)))
    ev.workers.run.stop()  # never reuse a process whose torch was patched


def torch_ops(ev: Evaluation, forbidden: dict[str, int], when: str = "") -> None:
    """PyTorch compute ops the run-time policy saw host code run (``host:`` entries are data moved
    through Python: ``host_compute``); allowed, and not flagged, when the options allow PyTorch calls."""
    if ev.options.allow_torch:
        return
    ops = {k: n for k, n in forbidden.items() if not k.startswith(HOST_PREFIX.strip())}
    if ops:
        ev.flag("torch-op", when=when, ops=", ".join(f"{op} (x{n})" for op, n in sorted(ops.items())))


def host_compute(ev: Evaluation, forbidden: dict[str, int]) -> None:
    from warpgym.env.worker.policy import HOST_ELEMENT_LIMIT

    host = {k.removeprefix(HOST_PREFIX): n for k, n in forbidden.items() if k.startswith(HOST_PREFIX)}
    if host:
        routes = ", ".join(f"{route}: {n} elements" for route, n in sorted(host.items()))
        ev.flag("host-compute", routes=routes, limit=HOST_ELEMENT_LIMIT)


def run_findings(ev: Evaluation, reply: m.RunReply) -> None:
    result = ev.result
    host_compute(ev, reply.forbidden_ops)
    code = OUTPUT_CODES.get(reply.kind or "")
    if code and not any(v.code == code for v in result.violations):
        result.violations.append(Violation(code, reply.error or CODES[code].meaning))
    if reply.scrub_error and reply.scrub_error not in result.skipped_checks:
        result.skipped_checks.append(reply.scrub_error)
    if reply.out_of_bounds:
        ev.flag("out-of-bounds", names=", ".join(reply.out_of_bounds))
    if reply.refused_launches:
        ev.flag("uncompiled-kernel", reason=reply.refused_launches[0])
    if reply.races:
        ev.flag("data-race", detail=reply.races[0])
    if reply.host_writes:
        ev.flag("host-write", detail=reply.host_writes[0])
    if reply.background:
        ev.flag("background-work", count=reply.background)
    # With PyTorch calls allowed, the last op writing an output may be PyTorch's; a CUDA extension's
    # launches are not Triton's. A call that launched nothing wrote none of its outputs either.
    if ev.task.language == "triton" and reply.unwritten and not reply.loader_launches \
            and not ev.options.allow_torch and not ev.extensions:
        ev.flag("output-not-written", which=", ".join(f"output {i}" for i in reply.unwritten))


def profiled_findings(ev: Evaluation, run: Any) -> bool:
    """What the policy and the sandbox saw while a profiler ran the candidate (``profile.DriverRun``);
    False, with the verdict failed, when they caught something: a candidate that behaves differently
    under a profiler is judged by what it did there too."""
    if run is None:
        return True
    result = ev.result
    before = len(result.violations)
    host_compute(ev, run.forbidden_ops)
    torch_ops(ev, run.forbidden_ops, when="under the profiler, ")
    if run.tampered:
        result.violations.append(violation("tampering", names=", ".join(run.tampered)))
    for code, message in run.incidents:
        if code in CODES and not any(v.code == code and v.message == message for v in result.violations):
            result.violations.append(Violation(code, message))
    if len(result.violations) == before:
        return True
    result.correct = False
    return False


def timing_findings(ev: Evaluation, stats: m.TimeBlockReply) -> bool:
    """The timing loop's calls answer to the same rules as the checked ones (patching, host ops); True
    (and the candidate failed) when they broke one."""
    found = len(ev.result.violations)
    if stats.tampered:
        tampered(ev, stats.tampered)
    host_compute(ev, stats.forbidden_ops)
    torch_ops(ev, stats.forbidden_ops, when="during the timing loop, ")
    if stats.out_of_bounds:
        ev.flag("out-of-bounds", names=", ".join(stats.out_of_bounds))
    if len(ev.result.violations) > found:
        ev.result.correct = False
        return True
    return False
