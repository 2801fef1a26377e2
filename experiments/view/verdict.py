"""A verdict (an ``EvalResult`` as stored) as the viewer shows it: the outcome in a word, what failed,
the instruction counts and the timings."""

from __future__ import annotations

from typing import Any

from . import fmt

MAX_FAILING_CASES = 50


def outcome(result: dict[str, Any] | None) -> str:
    """One word for a turn: correct, wrong (compiled, not correct), failed (at an earlier stage), no code."""
    if not result:
        return "no code"
    if result.get("correct"):
        return "correct"
    if result.get("compiled"):
        return "wrong"
    return "failed"


def label(result: dict[str, Any] | None) -> str:
    """The outcome with its stage or speedups: ``correct (eager 1.32x)``, ``failed at static``."""
    word = outcome(result)
    if result and word == "correct":
        speedups = [
            f"{k} {fmt.times(v)}"
            for k, v in (result.get("speedup") or {}).items()
            if fmt.number(v) is not None
        ]
        return word + (f" ({', '.join(speedups)})" if speedups else "")
    if result and word == "failed":
        return f"failed at {result.get('stage') or fmt.DASH}"
    return word


def verdict(result: dict[str, Any] | None) -> dict[str, Any]:
    """Everything the judge said about one candidate, as lists and tables of text."""
    if not result:
        return {"outcome": "no code", "label": "no code", "tables": [], "lists": []}
    cases = [c for c in result.get("cases") or [] if isinstance(c, dict)]
    failing = [c for c in cases if c.get("passed") is False]
    skipped = [c for c in cases if c.get("passed") is None]
    facts = [
        ("stage reached", fmt.general(result.get("stage"))),
        ("compiled", fmt.flag(result.get("compiled"))),
        ("correct", fmt.flag(result.get("correct"))),
        ("required instructions proven", fmt.flag(result.get("arch_verified"))),
        ("device", fmt.general(result.get("device"))),
        ("target", fmt.general(result.get("target"))),
        ("correctness checks", _checks(cases, failing, skipped)),
    ]
    tables = [fmt.pairs("Verdict", facts)]
    if failing:
        tables.append(_failing_cases(failing))
    tables += [t for t in (_instructions(result), _kernels(result), _timing(result)) if t]
    stage_s = result.get("seconds")
    if isinstance(stage_s, dict) and stage_s:
        tables.append(fmt.pairs("Judge's time by stage", [(k, fmt.seconds(v)) for k, v in stage_s.items()]))
    lists = [
        ("Violations", [_violation(v) for v in result.get("violations") or []]),
        ("Compile errors", [fmt.general(e) for e in result.get("compile_errors") or []]),
        ("Runtime error", [result["runtime_error"]] if result.get("runtime_error") else []),
        ("Missing instructions", [f"{k}: {v}" for k, v in (result.get("missing_features") or {}).items()]),
        ("Suspicious", [fmt.general(s) for s in result.get("suspicious") or []]),
        ("Not checked", [fmt.general(s) for s in result.get("skipped_checks") or []]),
        ("Skipped cases", [f"{fmt.case(c.get('case'))}: {c.get('skipped') or fmt.DASH}" for c in skipped]),
        ("Candidate's output", [result["stdout"]] if result.get("stdout") else []),
    ]
    return {
        "outcome": outcome(result),
        "label": label(result),
        "tables": tables,
        "lists": [{"title": t, "items": [fmt.text(i) for i in items]} for t, items in lists if items],
    }


def _checks(cases: list[Any], failing: list[Any], skipped: list[Any]) -> str:
    if not cases:
        return fmt.DASH
    passed = len(cases) - len(failing) - len(skipped)
    return f"{passed} passed, {len(failing)} failed, {len(skipped)} skipped"


def _violation(v: Any) -> str:
    if not isinstance(v, dict):
        return fmt.general(v)
    where = f" (line {v['line']})" if v.get("line") is not None else ""
    return f"{v.get('code') or fmt.DASH}{where}: {v.get('message') or ''}"


def _failing_cases(failing: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [
        [
            fmt.general(c.get("shape_set")),
            fmt.case(c.get("case")),
            fmt.general(c.get("seed")),
            fmt.general(c.get("distribution")),
            fmt.general(c.get("max_abs_error")),
            fmt.general(c.get("max_rel_error")),
            f"{fmt.count(c.get('mismatches'))} of {fmt.count(c.get('numel'))}",
            fmt.general(c.get("first_mismatch")),
            fmt.general(c.get("message")),
        ]
        for c in failing[:MAX_FAILING_CASES]
    ]
    more = len(failing) - MAX_FAILING_CASES
    return fmt.table(
        "Failing cases",
        [
            "shapes",
            "case",
            "seed",
            "inputs",
            "max abs error",
            "max rel error",
            "mismatches",
            "first",
            "message",
        ],
        rows,
        f"and {more} more failing cases" if more > 0 else "",
    )


def _instructions(result: dict[str, Any]) -> dict[str, Any] | None:
    counts = result.get("instructions")
    if not isinstance(counts, dict) or not counts:
        return None
    rows, zero = [], 0
    for family, c in counts.items():
        c = c if isinstance(c, dict) else {}
        if not any(fmt.number(c.get(k)) for k in ("ptx", "sass", "executed")):
            zero += 1
            continue
        rows.append([family, fmt.count(c.get("ptx")), fmt.count(c.get("sass")), fmt.count(c.get("executed"))])
    note = f"{zero} families counted none" + (": " + ", ".join(counts) if not rows else "") if zero else ""
    return fmt.table("Instruction counts", ["family", "PTX", "SASS", "executed"], rows, note)


def _kernels(result: dict[str, Any]) -> dict[str, Any] | None:
    kernels = [k for k in result.get("kernels") or [] if isinstance(k, dict)]
    if not kernels:
        return None
    rows = [
        [
            fmt.general(k.get("name")),
            fmt.general(k.get("target")),
            fmt.count(k.get("registers")),
            fmt.count(k.get("shared_bytes")),
            fmt.count(k.get("spills")),
            "; ".join(fmt.general(w) for w in k.get("warnings") or []) or fmt.DASH,
        ]
        for k in kernels
    ]
    return fmt.table("Kernels", ["kernel", "target", "registers", "shared bytes", "spills", "warnings"], rows)


def _timing(result: dict[str, Any]) -> dict[str, Any] | None:
    timing = [t for t in result.get("timing") or [] if isinstance(t, dict)]
    if not timing:
        return None
    baselines = sorted({b for t in timing for b in (t.get("baselines_ms") or {})})
    rows = [
        [
            fmt.case(t.get("case")),
            fmt.ms(t.get("median_ms")),
            f"{fmt.ms(t.get('min_ms'))} – {fmt.ms(t.get('max_ms'))}",
            fmt.count(t.get("runs")),
            *[fmt.ms((t.get("baselines_ms") or {}).get(b)) for b in baselines],
            fmt.general(t.get("tflops")),
            fmt.general(t.get("gbps")),
            fmt.pct(t.get("roofline_fraction")),
        ]
        for t in timing
    ]
    speedup = result.get("speedup") or {}
    note = ", ".join(f"speedup over {k}: {fmt.times(v)}" for k, v in speedup.items()) if speedup else ""
    return fmt.table(
        "Timings",
        [
            "case",
            "median",
            "range",
            "runs",
            *[f"{b} median" for b in baselines],
            "TFLOP/s",
            "GB/s",
            "of roofline",
        ],
        rows,
        note,
    )
