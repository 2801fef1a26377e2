"""How fast a tensor crosses between the judge and a worker: the protocol's path against a plain
``Connection.send_bytes``/``recv_bytes_into`` of the same bytes, over the same kind of socket pair.

    python scripts/wire_throughput.py --mib 1024 --repeats 3
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import time

import torch
from warpgym.env.protocol import wire


def _receive(conn, mib: int, repeats: int) -> None:
    buffer = bytearray(mib << 20)
    for _ in range(repeats):
        wire.recv(conn)
        conn.send_bytes(b"ok")
        conn.recv_bytes_into(buffer)
        conn.send_bytes(b"ok")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    here, there = ctx.Pipe()
    child = ctx.Process(target=_receive, args=(there, args.mib, args.repeats))
    child.start()
    x = torch.randn((args.mib << 20) // 4)
    raw = memoryview(x.view(torch.uint8).numpy())
    times: dict[str, list[float]] = {"protocol": [], "Connection": []}
    for _ in range(args.repeats):
        for name, send in (("protocol", lambda: wire.send(here, {"x": x})),
                           ("Connection", lambda: here.send_bytes(raw))):
            started = time.perf_counter()
            send()
            here.recv_bytes()
            times[name].append(time.perf_counter() - started)
    child.join()
    for name, ts in times.items():
        rates = sorted(args.mib / 1024 / t for t in ts)
        print(f"{name:10s} {args.mib} MiB: {statistics.median(rates):.2f} GiB/s "
              f"(min {rates[0]:.2f}, max {rates[-1]:.2f}, {args.repeats} runs)")


if __name__ == "__main__":
    main()
