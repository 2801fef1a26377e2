"""Do the intervals one evaluation reports cover what other evaluations of the same candidate report?

Reads `scripts/paired_repeat.py` results (the same pairs evaluated in five or more processes) and, for
every bench case whose per-round ratios three or more processes recorded, rebuilds each process's
interval from its rounds under several constructions: the order-statistics interval alone, widened by
0.01, 0.016 and 0.025 and by today's `PairedTiming.between_evaluations` (judge/ratios.py), and a t-interval
over the means of consecutive blocks of rounds. A construction covers a case when every process's
interval holds every other process's median. To see where misses come from it also counts, per round
index, the rounds that read more than 1% off their own process's median (and runs of them), and asks
how far the processes' medians agree once the first rounds are dropped. The rounds are those each run
took: a window stops once its own interval is narrow enough under the term it ran with (printed per file),
so a construction that would have asked for more rounds is judged here on the rounds the run took.

    python3 scripts/interval_study.py [docs/runs/paired-repeat-*.json ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from warpgym.env.judge.options import PairedTiming
from warpgym.env.judge.paired import order_effect
from warpgym.env.judge.ratios import Interval, median_interval
from warpgym.experiments.fixit.report import table as markdown_table

try:
    from scipy.stats import t as student_t
except ImportError:  # scipy is no dependency of the project: a table stands in
    student_t = None

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILES = "docs/runs/paired-repeat-*.json"
MIN_PROCESSES = 3
BLOCK = 3
"""Rounds per batch of the batch-means interval."""
OFF = 0.01
"""A round reads off when its ratio is more than this far (relative) from its own process's median."""
INDEXES = 10
DROPS = (0, 1, 2, 3)
MIN_KEPT = 6
"""Fewest rounds a process keeps after dropping its first ones (the judge's fewest at 95%)."""
LOOSE_KEPT = 3
"""The same what-if with almost every process kept: most ended at six rounds, which a floor of six drops."""
ORDER_LIMIT = 0.03
"""A case has an order effect when some process's rounds read this much apart by which side ran first:
its rounds then sit in two groups, every one off its median, and would swamp the round-index counts."""
AGREE = 1.02
EXTRA_TERMS = (0.0, 0.01, 0.016, 0.025)
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)
"""Two-sided 95% Student t quantiles for 1..30 degrees of freedom, for when scipy is absent."""
RECORDED = re.compile(r"median=([-\d.e+]+), low=([-\d.e+]+), high=([-\d.e+]+)")

Builder = Callable[[Sequence[float]], Interval | None]


@dataclass
class CaseRounds:
    """One bench case of one pair in one run file: the round ratios of each process that recorded them."""

    run: str
    task: str
    baseline: str
    case: Any
    rounds: list[list[float]] = field(default_factory=list)
    settled: list[bool | None] = field(default_factory=list)
    recorded: list[tuple[float, float, float] | None] = field(default_factory=list)
    """Each process's reported (median, low, high) for the record's baseline, where it parses."""

    @property
    def label(self) -> str:
        case = self.case
        shape = " ".join(str(v) for v in case.values()) if isinstance(case, dict) else str(case)
        return f"{self.task}:{self.baseline} {shape}"


# --- reading -------------------------------------------------------------------------------------------


def _finite_list(values: Any) -> bool:
    return isinstance(values, list) and bool(values) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)


def _recorded(text: Any) -> tuple[float, float, float] | None:
    """The (median, low, high) of a recorded `Ratio(...)` (stored as its repr)."""
    found = RECORDED.search(str(text)) if text else None
    if found is None:
        return None
    m, low, high = (float(g) for g in found.groups())
    return m, low, high


def collect(data: Any, run: str) -> tuple[list[CaseRounds], list[str]]:
    """The cases of one parsed paired-repeat file with at least MIN_PROCESSES processes holding round
    ratios for their record's own baseline, and a reason for each case (or the whole file) left out."""
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, list) or not runs:
        return [], [f"{run}: no 'runs' list of processes"]
    found: dict[tuple[str, str, str], CaseRounds] = {}
    for records in runs:
        for record in records if isinstance(records, list) else []:
            if not isinstance(record, dict):
                continue
            task, baseline = str(record.get("task")), str(record.get("baseline"))
            for detail in record.get("timing_detail") or []:
                if not isinstance(detail, dict):
                    continue
                key = (task, baseline, json.dumps(detail.get("case"), sort_keys=True))
                entry = found.setdefault(key, CaseRounds(run, task, baseline, detail.get("case")))
                ratios = (detail.get("round_ratios") or {}).get(baseline)
                if _finite_list(ratios):
                    entry.rounds.append([float(v) for v in ratios])
                    entry.settled.append(detail.get("settled"))
                    entry.recorded.append(_recorded((detail.get("ratios") or {}).get(baseline)))
    if not any(entry.rounds for entry in found.values()):
        return [], [f"{run}: no case holds per-round ratios for its record's baseline (older format)"]
    kept = [entry for entry in found.values() if len(entry.rounds) >= MIN_PROCESSES]
    skipped = [f"{run}: {entry.label}: {len(entry.rounds)} processes hold round ratios"
               for entry in found.values() if len(entry.rounds) < MIN_PROCESSES]
    return kept, skipped


# --- intervals -----------------------------------------------------------------------------------------


def t_quantile(df: int, table_only: bool = False) -> float:
    """The two-sided 95% t quantile: scipy's where installed, else T_975 and the normal 1.96 past it."""
    if df < 1:
        raise ValueError("a t quantile needs at least one degree of freedom")
    if student_t is not None and not table_only:
        return float(student_t.ppf(0.975, df))
    return T_975[df - 1] if df <= len(T_975) else 1.96


def order_interval(values: Sequence[float], widening: float) -> Interval:
    """The judge's interval: order statistics, each side grown in quadrature by ``widening`` x median."""
    return median_interval(values).widened(widening)


def batch_means_interval(values: Sequence[float], block: int = BLOCK, table_only: bool = False
                         ) -> Interval | None:
    """A t-interval over the means of consecutive blocks of ``block`` rounds (a trailing partial block is
    left out), which lets neighbouring rounds be correlated; None below two blocks. Its ``median`` field
    holds the centre, the mean of the block means."""
    blocks = len(values) // block
    if blocks < 2:
        return None
    means = [statistics.fmean(values[b * block:(b + 1) * block]) for b in range(blocks)]
    centre = statistics.fmean(means)
    half = t_quantile(blocks - 1, table_only) * statistics.stdev(means) / math.sqrt(blocks)
    return Interval(centre, centre - half, centre + half, 0.95, blocks)


def builders(default: float) -> dict[str, Builder]:
    """The constructions compared, by name; the default term is read from PairedTiming by the caller."""
    named: dict[str, Builder] = {}
    for term in sorted({*EXTRA_TERMS, default}):
        name = "order" if term == 0 else f"order+{term:.3f}" + (" (default)" if term == default else "")
        named[name] = partial(order_interval, widening=term)
    named[f"batch-means t ({BLOCK})"] = batch_means_interval
    return named


def misses(intervals: Sequence[Interval | None], medians: Sequence[float]) -> tuple[int, int]:
    """(pairs missed, pairs checked): each process's interval against every other process's median."""
    missed = checked = 0
    for i, interval in enumerate(intervals):
        if interval is None:
            continue
        for j, m in enumerate(medians):
            if i != j:
                checked += 1
                missed += not interval.low <= m <= interval.high
    return missed, checked


def study_case(rounds: Sequence[Sequence[float]], named: dict[str, Builder]) -> dict[str, Any]:
    """Per-process medians, their max/min, the largest order effect, and per construction whether it
    covers, with half-widths."""
    medians = [statistics.median(r) for r in rounds]
    out: dict[str, Any] = {"rounds": [len(r) for r in rounds], "medians": medians,
                           "max_over_min": max(medians) / min(medians),
                           "order_effect": largest_order_effect(rounds), "constructions": {}}
    for name, build in named.items():
        intervals = [build(r) for r in rounds]
        missed, checked = misses(intervals, medians)
        widths = [iv.half_width for iv in intervals if iv is not None]
        out["constructions"][name] = {
            "covers": missed == 0 if checked else None, "missed": missed, "checked": checked,
            "half_widths": widths, "half_width": statistics.median(widths) if widths else None,
            "intervals": [None if iv is None else [iv.low, iv.median, iv.high] for iv in intervals]}
    return out


def totals(studies: Sequence[dict[str, Any]], names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Per construction: cases covered out of those it could judge, pairs missed, and the median half-width
    over every process's interval."""
    out = {}
    for name in names:
        parts = [s["constructions"][name] for s in studies]
        judged = [p for p in parts if p["covers"] is not None]
        widths = [w for p in parts for w in p["half_widths"]]
        out[name] = {"covered": sum(p["covers"] for p in judged), "cases": len(judged),
                     "missed": sum(p["missed"] for p in parts), "checked": sum(p["checked"] for p in parts),
                     "half_width": statistics.median(widths) if widths else None}
    return out


def implied_terms(recorded: Sequence[tuple[float, float, float] | None],
                  rounds: Sequence[Sequence[float]]) -> list[float]:
    """The between-evaluations term each side of each reported interval carries: its excess over the
    order-statistics interval of the (rounded) round ratios, taken out in quadrature. A check that the
    study rebuilds the judge's intervals, and which term a run was made with."""
    terms = []
    for rec, values in zip(recorded, rounds, strict=True):
        if rec is None:
            continue
        m, low, high = rec
        raw = order_interval(values, 0.0)
        for side, bare in ((high - m, raw.high - raw.median), (m - low, raw.median - raw.low)):
            terms.append(math.sqrt(max(0.0, side * side - bare * bare)) / m)
    return terms


def largest_order_effect(rounds: Sequence[Sequence[float]]) -> float | None:
    """The order effect of largest magnitude among the processes (signed; the judge's own measure)."""
    effects = [e for e in map(order_effect, rounds) if e is not None]
    return max(effects, key=abs) if effects else None


# --- rounds by index -----------------------------------------------------------------------------------


def off_signs(values: Sequence[float], off: float = OFF) -> list[int]:
    """+1 for a round more than ``off`` above its process's median (the baseline read slow or the candidate
    fast), -1 for one more than ``off`` below (the baseline fast or the candidate slow), else 0."""
    m = statistics.median(values)
    return [1 if v > m * (1 + off) else -1 if v < m * (1 - off) else 0 for v in values]


def episodes(signs: Sequence[int]) -> list[tuple[int, int, int]]:
    """(start, length, sign) of every maximal run of two or more consecutive rounds off the same way."""
    found = []
    start = 0
    for i in range(1, len(signs) + 1):
        if i == len(signs) or signs[i] != signs[start]:
            if signs[start] != 0 and i - start >= 2:
                found.append((start, i - start, signs[start]))
            start = i
    return found


def round_index_counts(processes: Iterable[Sequence[float]], indexes: int = INDEXES) -> dict[str, list[int]]:
    """Per round index: rounds there, those off high and low, and episodes (high, low) starting there; the
    episode lists carry one more slot for those starting at ``indexes`` or later."""
    counts = {key: [0] * indexes for key in ("rounds", "high", "low")}
    counts |= {key: [0] * (indexes + 1) for key in ("high_episodes", "low_episodes")}
    for values in processes:
        signs = off_signs(values)
        for i, sign in enumerate(signs[:indexes]):
            counts["rounds"][i] += 1
            counts["high"][i] += sign > 0
            counts["low"][i] += sign < 0
        for start, _, sign in episodes(signs):
            counts["high_episodes" if sign > 0 else "low_episodes"][min(start, indexes)] += 1
    return counts


# --- dropping the first rounds -------------------------------------------------------------------------


def drop_first(rounds: Sequence[Sequence[float]], k: int, min_kept: int = MIN_KEPT) -> dict[str, Any]:
    """Each process's median from round ``k`` on (processes left with fewer than ``min_kept`` rounds left
    out), their max/min, and the max/min of the same processes with every round."""
    kept = [i for i, r in enumerate(rounds) if len(r) - k >= min_kept]
    medians = [statistics.median(rounds[i][k:]) for i in kept]
    full = [statistics.median(rounds[i]) for i in kept]
    two = len(kept) >= 2
    return {"kept": kept, "medians": medians, "max_over_min": max(medians) / min(medians) if two else None,
            "full_max_over_min": max(full) / min(full) if two else None}


def drop_totals(drops: Sequence[dict[int, dict[str, Any]]], ks: Sequence[int] = DROPS,
                agree: float = AGREE) -> dict[int, dict[str, int]]:
    """Per k: cases with two or more processes kept, those within ``agree``, and those within it with every
    round of the same processes (what the dropping changes, apart from which processes remain)."""
    out = {}
    for k in ks:
        judged = [d[k] for d in drops if d[k]["max_over_min"] is not None]
        out[k] = {"cases": len(judged), "within": sum(d["max_over_min"] <= agree for d in judged),
                  "within_all_rounds": sum(d["full_max_over_min"] <= agree for d in judged)}
    return out


# --- printing ------------------------------------------------------------------------------------------


def _pct(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def _share(part: int, whole: int) -> str:
    return _pct(part / whole if whole else None, 1)


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    return markdown_table(list(header), [list(row) for row in rows]).split("\n")


def _cover_cell(part: dict[str, Any]) -> str:
    verdict = {True: "yes", False: f"no ({part['missed']}/{part['checked']})", None: "n/a"}[part["covers"]]
    return f"{verdict} {_pct(part['half_width'])}"


def _short(run: str) -> str:
    return run.removeprefix("paired-repeat-")


def case_lines(cases: Sequence[CaseRounds], studies: Sequence[dict[str, Any]], names: Sequence[str]
               ) -> list[str]:
    """Section 1: one row per case."""
    lines = ["## 1. Per case: process medians and whether each construction covers",
             "(cell: covers every other process's median, else no with pairs missed/checked; then the median "
             "relative half-width. order eff.: the largest per-process order effect)", ""]
    rows = [[_short(c.run), c.label, "/".join(map(str, s["rounds"])),
             " ".join(f"{m:.4f}" for m in s["medians"]), _ratio(s["max_over_min"]),
             _pct(s["order_effect"], 1), *(_cover_cell(s["constructions"][n]) for n in names)]
            for c, s in zip(cases, studies, strict=True)]
    return lines + _table(["run", "case", "rounds", "medians", "max/min", "order eff.", *names], rows)


def totals_lines(sums: dict[str, dict[str, Any]]) -> list[str]:
    """Section 2: one row per construction."""
    rows = [[n, f"{t['covered']}/{t['cases']}", f"{t['missed']}/{t['checked']}", _pct(t["half_width"])]
            for n, t in sums.items()]
    return ["## 2. Totals per construction", ""] + _table(
        ["construction", "cases covered", "pairs missed", "median half-width"], rows)


def index_lines(groups: dict[str, dict[str, list[int]]]) -> list[str]:
    """Section 3: one row per round index, the groups of cases side by side."""
    lines = [f"## 3. Rounds more than {OFF:.0%} off their own process's median, by round index",
             "(high / low: share of rounds above / below it; high reads a slow baseline or a fast candidate. "
             "episodes: runs of 2+ consecutive rounds off the same way, high / low, by the index they start "
             "at)", ""]
    header = ["index", "timed first"]
    for name in groups:
        header += [f"{name}: rounds", f"{name}: high / low", f"{name}: episodes"]
    width = len(next(iter(groups.values()))["rounds"])
    rows = []
    for i in range(width + 1):
        row: list[Any] = [i if i < width else f"{width}+", ("candidate" if i % 2 == 0 else "baseline")
                          if i < width else ""]
        for g in groups.values():
            episodes_cell = f"{g['high_episodes'][i]} / {g['low_episodes'][i]}"
            if i < width:
                n = g["rounds"][i]
                row += [n, f"{_share(g['high'][i], n)} / {_share(g['low'][i], n)}", episodes_cell]
            else:
                row += ["", "", episodes_cell]
        rows.append(row)
    return lines + _table(header, rows)


def drop_lines(cases: Sequence[CaseRounds], drops: Sequence[dict[int, dict[str, Any]]],
               sums: dict[int, dict[str, int]], loose: dict[int, dict[str, int]]) -> list[str]:
    """Section 4: one row per case, then the counts within AGREE."""
    lines = [f"## 4. Dropping each process's first k rounds (processes left with < {MIN_KEPT} rounds left "
             "out; cell: max/min of the medians, processes kept)", ""]
    rows = [[_short(c.run), c.label, *(f"{_ratio(d[k]['max_over_min'])} ({len(d[k]['kept'])})"
                                       for k in DROPS)] for c, d in zip(cases, drops, strict=True)]
    lines += _table(["run", "case", *(f"k={k}" for k in DROPS)], rows) + [""]
    for label, counts in ((f"at least {MIN_KEPT} rounds kept", sums), (f"at least {LOOSE_KEPT} kept", loose)):
        lines += [f"- {label}, k={k}: {t['within']}/{t['cases']} cases within {AGREE} "
                  f"(the same processes with every round: {t['within_all_rounds']}/{t['cases']})"
                  for k, t in counts.items()]
    return lines


# --- main ----------------------------------------------------------------------------------------------


def run_lines(run: str, kept: Sequence[CaseRounds], skipped: Sequence[str]
              ) -> tuple[list[str], dict[str, Any]]:
    """A file's line in the header: its cases, whether its rounds were settled, the term it carried."""
    terms = [t for c in kept for t in implied_terms(c.recorded, c.rounds)]
    settled = sorted({"not recorded" if s is None else str(s) for c in kept for s in c.settled})
    term = f"{statistics.median(terms):.4f} ({min(terms):.4f}-{max(terms):.4f})" if terms else "-"
    lines = [f"- {_short(run)}: {len(kept)} cases; settled: {'/'.join(settled) or '-'}; term its intervals "
             f"carry, median (range): {term}"] + [f"  - skipped {reason}" for reason in skipped]
    return lines, {"run": run, "cases": len(kept), "skipped": list(skipped), "settled": settled,
                   "implied_term": statistics.median(terms) if terms else None}


def index_groups(cases: Sequence[CaseRounds], effects: Sequence[float | None]
                 ) -> dict[str, dict[str, list[int]]]:
    """Round-index counts over all cases, and over the cases without an order effect split by whether their
    rounds followed a settling round."""
    calm = [c for c, e in zip(cases, effects, strict=True) if e is None or abs(e) <= ORDER_LIMIT]
    return {"all": round_index_counts(r for c in cases for r in c.rounds),
            "not settled†": round_index_counts(r for c in calm if not all(c.settled) for r in c.rounds),
            "settled†": round_index_counts(r for c in calm if all(c.settled) for r in c.rounds)}


def run_study(files: Sequence[tuple[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    """The printed lines and every number, from (run name, parsed JSON) pairs."""
    default = PairedTiming().between_evaluations
    named = builders(default)
    t_source = "scipy" if student_t is not None else "table"
    said = {"scipy": "scipy", "table": "a table (df 1..30, then 1.96): scipy is not installed"}[t_source]
    lines = ["# Interval study", "", f"between_evaluations (PairedTiming default): {default}; "
             f"t quantiles from {said}", ""]
    cases: list[CaseRounds] = []
    runs_info = []
    for run, data in files:
        kept, skipped = collect(data, run)
        run_text, info = run_lines(run, kept, skipped)
        lines += run_text
        runs_info.append(info)
        cases += kept
    studies = [study_case(c.rounds, named) for c in cases]
    sums = totals(studies, list(named))
    groups = index_groups(cases, [s["order_effect"] for s in studies])
    drops = [{k: drop_first(c.rounds, k) for k in DROPS} for c in cases]
    loose = [{k: drop_first(c.rounds, k, LOOSE_KEPT) for k in DROPS} for c in cases]
    drop_sums, loose_sums = drop_totals(drops), drop_totals(loose)
    order_cases = sum(e is not None and abs(e) > ORDER_LIMIT for e in (s["order_effect"] for s in studies))
    lines += ["", f"{len(cases)} cases from {len(files)} files; {order_cases} with an order effect over "
              f"{ORDER_LIMIT:.0%} (left out of the columns marked † below)", ""]
    lines += case_lines(cases, studies, list(named)) + [""] + totals_lines(sums) + [""]
    lines += index_lines(groups) + [""] + drop_lines(cases, drops, drop_sums, loose_sums)
    numbers = {"between_evaluations": default, "t_source": t_source,
               "off": OFF, "block": BLOCK, "min_kept": MIN_KEPT, "loose_kept": LOOSE_KEPT, "agree": AGREE,
               "order_limit": ORDER_LIMIT, "runs": runs_info,
               "cases": [{"run": c.run, "task": c.task, "baseline": c.baseline, "case": c.case,
                          "settled": c.settled, "round_ratios": c.rounds, **s, "drop_first": d,
                          f"drop_first_keeping_{LOOSE_KEPT}": lo}
                         for c, s, d, lo in zip(cases, studies, drops, loose, strict=True)],
               "totals": sums, "round_index": groups, "drop_totals": drop_sums,
               f"drop_totals_keeping_{LOOSE_KEPT}": loose_sums}
    return lines, numbers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help=f"default: {DEFAULT_FILES}")
    parser.add_argument("--json", type=Path, help="write every number here")
    args = parser.parse_args(argv)
    paths = args.files or sorted(ROOT.glob(DEFAULT_FILES))
    files = []
    for path in paths:
        try:
            files.append((path.stem, json.loads(path.read_text())))
        except (OSError, ValueError) as exc:
            print(f"skipped {path}: {exc}")
    lines, numbers = run_study(files)
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps(numbers, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
