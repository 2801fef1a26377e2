"""Evaluations per minute through `warpgym serve` from concurrent clients, against the same evaluators
in-process, and the time the server adds to each request. On the GPU machine:

    python3 scripts/serve_throughput.py --clients 8 --rounds 2 --out $OUT/serve_throughput.json

The candidates are ``warpgym bench``'s mix (the core tasks' references and plausible wrong candidates),
repeated ``--rounds`` times, each copy with a comment of its own so no verdict is answered from a
cache. The same devices (every visible GPU ``--workers-per-gpu`` times, or ``--cpu N`` evaluators)
serve both phases, one after the other:

1. in-process: a ``LocalExecutor`` (what the server and the experiment runner use) judges the mix from
   one thread per evaluator, after one untimed pass that warms the workers and the baselines;
2. served: ``warpgym serve`` on loopback over the same devices, warmed the same way, then ``--clients``
   processes, each judging its share of the mix one request at a time (submit, then stream the verdict);
3. overhead: one client, sequential requests to the idle server: the round trip minus the judge's own
   seconds (``seconds.total``), for candidates rejected at the static stage (nothing but the server's
   path) and for the references.

Verdicts must agree between the phases (the JSON says whether they did). ``--cpu N`` runs in Triton's
interpreter with nothing timed: a check of the script, not a GPU figure.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

STATIC_REJECT = "import torch\n\n\ndef {entry}(*args):\n    return torch.zeros(1)\n"


def _verdict(result: dict[str, Any]) -> list[Any]:
    codes = sorted(v["code"] for v in result["violations"])
    return [result["stage"], result["compiled"], result["correct"], codes]


def _stats(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "p90": None, "mean": None}
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return {"median": statistics.median(ordered), "p90": p90, "mean": statistics.fmean(ordered)}


def candidates(tasks: list[str] | None, rounds: int,
               tag: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(warm-up pairs, measured pairs): the mix once as it is, then ``rounds`` tagged copies."""
    from warpgym.experiments.bench.eval_throughput import mix

    base = [(task, source) for task, _, source in mix(tasks)]
    measured = [(task, f"{source}\n# {tag} round {r} item {i}\n") for r in range(rounds)
                for i, (task, source) in enumerate(base)]
    return base, measured


def in_process(devices: list[str], warm: list[tuple[str, str]], pairs: list[tuple[str, str]],
               timing: bool) -> dict[str, Any]:
    from warpgym.env import EvalOptions
    from warpgym.experiments.executors import LocalExecutor
    from warpgym.tasks import get_task

    options = EvalOptions(device=devices[0], timing=timing)
    executor = LocalExecutor(devices)
    verdicts: dict[int, list[Any]] = {}
    try:
        def drain(work: list[tuple[int, str, str]], out: dict[int, list[Any]] | None) -> None:
            while work:
                try:
                    index, task, source = work.pop()
                except IndexError:
                    return
                result = executor.evaluate(get_task(task), source, options).to_dict()
                if out is not None:
                    out[index] = _verdict(result)

        for phase, items, out in (("warm", warm * len(devices), None), ("measured", pairs, verdicts)):
            work = [(i, t, s) for i, (t, s) in enumerate(items)][::-1]
            threads = [threading.Thread(target=drain, args=(work, out)) for _ in devices]
            started = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            seconds = time.perf_counter() - started
            print(f"in-process {phase}: {len(items)} evaluations in {seconds:.1f} s", file=sys.stderr)
    finally:
        executor.close()
    return {"evaluations": len(pairs), "seconds": seconds, "per_minute": 60 * len(pairs) / seconds,
            "verdicts": [verdicts[i] for i in range(len(pairs))]}


def _ready(pause: float) -> None:
    import warpgym.experiments.serve.client  # noqa: F401 - imported once, before the clock starts

    time.sleep(pause)  # so each call lands on its own process


def _client(url: str, work: list[tuple[int, str, str]], timing: bool) -> list[dict[str, Any]]:
    from warpgym.experiments.serve.client import ServeClient

    out = []
    with ServeClient(url, busy_timeout_s=3600) as client:
        for index, task, source in work:
            t0 = time.perf_counter()
            result = client.evaluate(task, source, options={"timing": timing})
            out.append({"index": index, "round_trip": time.perf_counter() - t0,
                        "judge": result["seconds"].get("total", 0.0), "verdict": _verdict(result)})
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(device_args: list[str], journal: Path) -> tuple[subprocess.Popen[bytes], str]:
    import httpx

    port = _free_port()
    command = [sys.executable, "-m", "warpgym.experiments.cli", "serve", "--port", str(port),
               "--journal", str(journal), "--max-queue", "100000", *device_args]
    proc = subprocess.Popen(command, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"warpgym serve exited with {proc.returncode}")
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("warpgym serve did not start within 600 s")


def served(url: str, workers: int, clients: int, warm: list[tuple[str, str]],
           pairs: list[tuple[str, str]], timing: bool) -> dict[str, Any]:
    from warpgym.experiments.serve.client import ServeClient, item

    with ServeClient(url, busy_timeout_s=3600) as client:  # warm every evaluator, as in-process
        started = time.perf_counter()
        client.evaluate_many([item(t, s + f"\n# warm {w}\n", options={"timing": timing})
                              for w in range(workers) for t, s in warm])
        print(f"served warm: {workers * len(warm)} in {time.perf_counter() - started:.1f} s",
              file=sys.stderr)
    work = [(i, t, s) for i, (t, s) in enumerate(pairs)]
    shares = [work[c::clients] for c in range(clients)]
    with ProcessPoolExecutor(clients, mp_context=get_context("spawn")) as pool:
        list(pool.map(_ready, [0.5] * clients))  # the client processes started and imported, off the clock
        started = time.perf_counter()
        rows = [r for rs in pool.map(_client, [url] * clients, shares, [timing] * clients) for r in rs]
        seconds = time.perf_counter() - started
    print(f"served: {len(pairs)} evaluations from {clients} clients in {seconds:.1f} s", file=sys.stderr)
    rows.sort(key=lambda r: r["index"])
    return {"clients": clients, "evaluations": len(pairs), "seconds": seconds,
            "per_minute": 60 * len(pairs) / seconds,
            "round_trip_s": _stats([r["round_trip"] for r in rows]), "verdicts": [r["verdict"] for r in rows]}


def overhead(url: str, warm: list[tuple[str, str]], count: int, timing: bool, tag: str) -> dict[str, Any]:
    """Sequential requests to an idle server: what it adds beyond the judge's own seconds."""
    from warpgym.tasks import get_task

    out: dict[str, Any] = {}
    tasks = list(dict.fromkeys(t for t, _ in warm))
    static = [(t, STATIC_REJECT.format(entry=get_task(t).entrypoint) + f"# {tag} {i}\n")
              for i, t in enumerate(tasks * max(1, count // len(tasks)))]
    judged = [(t, s + f"\n# {tag} overhead {i}\n") for i, (t, s) in enumerate((warm * count)[:count])]
    for name, pairs in (("static_reject", static), ("mix", judged)):
        rows = _client(url, [(i, t, s) for i, (t, s) in enumerate(pairs)], timing)
        out[name] = {"requests": len(rows), "round_trip_s": _stats([r["round_trip"] for r in rows]),
                     "judge_s": _stats([r["judge"] for r in rows]),
                     "added_s": _stats([r["round_trip"] - r["judge"] for r in rows])}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2, help="copies of the mix measured (default 2)")
    parser.add_argument("--tasks", default=None, help="comma-separated subset of the core tasks")
    parser.add_argument("--workers-per-gpu", type=int, default=1)
    parser.add_argument("--cpu", type=int, default=0, metavar="N",
                        help="N CPU evaluators instead of the GPUs (a check of the script)")
    parser.add_argument("--overhead-requests", type=int, default=20)
    parser.add_argument("--no-timing", action="store_true", help="skip the timing stage on a GPU")
    parser.add_argument("--out", type=Path, default=Path("serve_throughput.json"))
    args = parser.parse_args()

    import torch

    from warpgym import __version__

    if args.cpu:
        devices, device_args = ["cpu"] * args.cpu, ["--devices", "cpu", "--workers", str(args.cpu)]
    else:
        if not torch.cuda.is_available():
            parser.error("no GPU visible; use --cpu N for a check of the script")
        gpus = torch.cuda.device_count()
        devices = [f"cuda:{i}" for _ in range(args.workers_per_gpu) for i in range(gpus)]
        device_args = ["--devices", "cuda", "--workers-per-gpu", str(args.workers_per_gpu)]
    timing = not args.no_timing and not args.cpu
    tasks = [t.strip() for t in args.tasks.split(",")] if args.tasks else None
    tag = f"serve-throughput {time.time_ns()}"
    warm, pairs = candidates(tasks, args.rounds, tag)
    report: dict[str, Any] = {
        "version": __version__, "devices": devices, "timing": timing, "clients": args.clients,
        "gpu": torch.cuda.get_device_name(0) if devices[0].startswith("cuda") else None,
        "mix": len(warm), "measured": len(pairs),
    }
    report["in_process"] = in_process(devices, warm, pairs, timing)
    args.out.write_text(json.dumps(report, indent=1))  # each phase kept as it ends: a time limit loses none
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_server(device_args, Path(tmp) / "journal.sqlite")
        try:
            report["served"] = served(url, len(devices), args.clients, warm, pairs, timing)
            args.out.write_text(json.dumps(report, indent=1))
            report["overhead"] = overhead(url, warm, args.overhead_requests, timing, tag)
        finally:
            proc.terminate()
            proc.wait(300)
    report["served_over_in_process"] = report["served"]["per_minute"] / report["in_process"]["per_minute"]
    report["verdicts_agree"] = report["served"]["verdicts"] == report["in_process"]["verdicts"]
    for phase in ("in_process", "served"):
        report[phase].pop("verdicts")
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k not in ("overhead",)}, indent=1))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0 if report["verdicts_agree"] else 1


if __name__ == "__main__":
    sys.exit(main())
