"""Every violation code, with what it means and, for codes the harness words itself, its message.

One table for both sides of the trust wall: the worker words the findings it reports (a missing
entrypoint, outputs that are not plain tensors) with the same templates the judge uses, and a code
that is not listed here cannot be raised (``violation``). The static scan and the sandbox word their
own detailed messages, but only under codes listed here (tests hold them to it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Violation:
    """A policy or cheating finding. ``code`` is stable; ``message`` is for people."""

    code: str
    message: str
    line: int | None = None


@dataclass(frozen=True)
class Code:
    meaning: str
    """One line: what the candidate did."""
    template: str | None = None
    """The message, ``str.format`` fields filled by ``message``; None where the finder words it."""
    discredits_timing: bool = False
    """The finding makes the candidate's timed calls no measure of its work: found after the timing loop, it
    withdraws the speedup as well as failing the candidate."""


def timing_code(meaning: str, template: str | None = None) -> Code:
    """A finding on the device's evidence that the timed calls did not do the candidate's work."""
    return Code(meaning, template, discredits_timing=True)


CODES: dict[str, Code] = {
    # the static scan (judge/static.py)
    "syntax": Code("the source does not parse"),
    "missing-entrypoint": Code("the module defines no function of the task's entrypoint name",
                               "the module defines no function {name!r} (the task's entrypoint)"),
    "signature": Code("the entrypoint's parameters are not the task's",
                      "{name} takes ({got}); the task passes ({expected})"),
    "no-kernel": Code("a Triton task's module defines no @triton.jit kernel"),
    "forbidden-import": Code("the module imports what a candidate may not use"),
    "torch-internals": Code("the module names parts of torch a kernel wrapper never needs"),
    "kernel-body": Code("a @triton.jit body calls something that is not Triton"),
    "kernel-print": Code("a kernel prints its values, which host code can read back",
                         "kernel {kernel} prints (its compiled code calls printf): what a kernel prints "
                         "reaches the process's output, where host code could read it back and compute the "
                         "answer; kernels may not print"),
    "interpreter-detection": Code("the module asks whether Triton's interpreter runs it"),
    "forbidden-call": Code("the module calls what a candidate may not call"),
    "torch-compute": Code("host code names a PyTorch compute op"),
    "obfuscated-access": Code("a computed attribute name hides which function is called"),
    "introspection": Code("the module reaches into the interpreter's internals"),
    "rng-seeded": Code("the module seeds or sets a random generator, which only the harness does"),
    # what a run showed
    "torch-op": Code("host code ran PyTorch compute ops",
                     "{when}host code ran PyTorch compute ops: {ops}; only allocation, views and kernel "
                     "launches are allowed"),
    "host-compute": Code("host code moved tensor data through Python",
                         "host code moved tensor data through Python ({routes}); more than {limit} elements "
                         "per call means the host, not a kernel, computed the answer"),
    "mutated-input": Code("the candidate modified its inputs",
                          "the candidate modified its inputs: {names}; inputs must be left as given"),
    "output-type": Code("the entrypoint returned something other than plain tensors",
                        "the entrypoint returned {types}; it must return plain torch.Tensor objects (no "
                        "subclasses, no lazy wrappers)"),
    "out-of-bounds": Code("a kernel wrote outside its inputs",
                          "the candidate wrote past the end (or before the start) of its input(s) {names}: "
                          "an unmasked store or wrong offsets corrupt memory that is not the kernel's"),
    "background-work": Code("threads were still running after the entrypoint returned",
                            "{count} thread(s) started by the candidate were still running when the "
                            "entrypoint returned; every result must be computed (or queued on the current "
                            "stream) before it returns"),
    "output-not-written": Code("an output was never given to any of the candidate's kernels",
                               "{which} was never given to any of the candidate's Triton kernels, so no "
                               "kernel computed it (a buffer filled on the host, by a library, or never)"),
    "uncompiled-kernel": Code("the interpreter ran a kernel that was not compiled for the target",
                              "{reason}"),
    "no-kernel-launched": Code("the entrypoint returned without launching a kernel of the task's language",
                               "the entrypoint returned without launching {kernel}; {task}'s arithmetic "
                               "must run in such kernels"),
    "no-loader-module": Code("a CUDA/PTX candidate built no module through the loader",
                             "no module was built through warpgym.loader (load_cuda / "
                             "load_ptx); a CUDA/PTX task's kernels must be compiled and launched through it"),
    "stale-output": Code("outputs replayed from an earlier call",
                         "returned exactly the outputs of an earlier call (seed {seed}) for different "
                         "inputs: results are cached or replayed instead of computed"),
    "inconsistent": Code("outputs right at first and wrong later",
                         "outputs were right {earlier} and wrong {later}, on fresh inputs: a kernel must "
                         "give the same answers on every call, not only while it is first checked"),
    "tampering": Code("the candidate changed the harness's functions or state",
                      "the candidate changed the harness's functions or state: {names}; timing, "
                      "synchronisation and the run-time watch are not the candidate's to change"),
    "data-race": Code("a kernel's programs, or the elements of one program, share memory in no fixed order",
                      "{detail}"),
    "profiled-call-wrong": Code("the call run under Nsight Compute returned a wrong answer",
                                "the call Nsight Compute profiled (case {case}) returned a wrong answer: "
                                "{detail}. Its executed instructions are the evidence for the required "
                                "features, so that call must compute the task as every other does"),
    "memcheck": Code("compute-sanitizer found memory errors",
                     "compute-sanitizer memcheck found {errors} error(s) on {case}:\n{report}"),
    # the channel and the confinement (judge/pool.py, worker/sandbox.py)
    "forged-reply": Code("the worker's channel carried data that was not the worker's answer",
                         "a reply that was not the worker's own answer: {detail}"),
    "sandbox-network": Code("the sandbox refused network access"),
    "sandbox-process": Code("the sandbox refused starting a process"),
    "sandbox-signal": Code("the sandbox refused sending a signal"),
    "sandbox-native": Code("the sandbox refused native memory or library access"),
    "sandbox-filesystem": Code("the sandbox refused a file outside the worker's own directory"),
    "hostile-file": Code("a file the judge reads from the worker's directory was replaced (a link, a FIFO)"),
    # what the device did (judge/device_evidence.py)
    "device-library-kernel": timing_code("a kernel the candidate did not build ran inside the entrypoint"),
    "device-host-copy": timing_code(
        "the host copied more than a small table to the GPU inside the entrypoint"),
    "device-host-read": timing_code(
        "more than a small table was copied from the GPU to the host in the entrypoint"),
    "device-unordered-kernel": timing_code(
        "a kernel ran beside the harness's kernels that open or close a call"),
    "device-trace": timing_code("the GPU's activity during a call could not be traced, or the trace was cut"),
    "device-timed-unchecked-kernel": timing_code("a traced timed call ran a kernel that no checked call ran"),
    "device-timed-no-kernel": timing_code("a traced timed call launched none of the candidate's kernels"),
    "device-timed-less-work": timing_code(
        "the timed calls took less time than the candidate's kernels took on the device when traced or "
        "checked on the same case"),
    "timed-wrong-answer": timing_code(
        "a timed call's outputs, read at sampled positions, were not what its inputs give (the reference's "
        "answer, or a random op's own checked answer on the same inputs)"),
    "reserved-kernel-name": timing_code(
        "a kernel of the candidate's takes a library kernel's name",
        "your kernels {names} take the names of library kernels; name your kernels yourself (a device trace "
        "names kernels only by name)"),
    "too-large": Code("the candidate's source is longer than an action may be"),
    "output-layout": Code("an output is not in the layout or on the device the statement promises"),
    "output-aliases-input": Code("an output shares memory with an input",
                                 "output {index} shares memory with the input {name!r}: the caller's result "
                                 "would change whenever that input does; return a new tensor that your "
                                 "kernel writes"),
    "output-reused": Code("an output is the memory of an earlier call's output",
                          "output {index} lies in the memory of an output an earlier call returned, which "
                          "the caller still holds: a cached or reused output buffer overwrites the earlier "
                          "result; return a new tensor from every call"),
    "host-write": Code("host code wrote a tensor's memory outside any kernel or PyTorch op", "{detail}"),
}


def message(code: str, **fields: Any) -> str:
    """The message of ``code`` with its fields filled; KeyError for a code that is not listed."""
    template = CODES[code].template
    if template is None:
        raise ValueError(f"violation code {code!r} has no message template: its finder words it")
    return template.format(**fields)


def violation(code: str, **fields: Any) -> Violation:
    return Violation(code, message(code, **fields))
