"""``warpgym serve``: warm evaluators behind an HTTP API, for RL trainers and many clients.

The server judges through the same executors as the experiment runner (``experiments/executors.py``),
so a verdict from it is the verdict ``env.step`` would give. Modules, each with one job:

- ``models``: the requests a client may send, validated (pydantic);
- ``cache``: what a verdict depends on (its key), and which verdicts may be reused;
- ``journal``: accepted submissions and remembered verdicts in SQLite, so a restart loses nothing;
- ``queue``: evaluations waiting for a worker, by priority, bounded;
- ``service``: submission, coalescing of duplicates, the dispatch threads, retries, draining;
- ``telemetry``: counters, latencies and GPU utilisation in Prometheus' text format;
- ``guards``: the bearer token, request size and rate limits;
- ``app``: the HTTP routes (FastAPI); ``server``: uvicorn, devices and signals;
- ``client``: sync and async clients (httpx); ``reward``: a reward function for TRL's GRPO trainer.

FastAPI, uvicorn and httpx come with ``pip install 'warpgym[serve]'``.
"""
