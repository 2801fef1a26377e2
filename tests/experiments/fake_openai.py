"""A loopback server that speaks OpenAI's Chat Completions wire format, for runs that call a "real"
provider without the network: every request is logged, every answer numbered, so a test sees which
answers were paid for (a request reached the server) and which were not."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROMPT_TOKENS = 1000
COMPLETION_TOKENS = 500
PRICES = {"gpt-5-mini": {"input": 1.0, "output": 2.0}}
"""USD per million tokens: every answer costs (1000 * 1 + 500 * 2) / 1e6 = $0.002."""
COST = (PROMPT_TOKENS * 1.0 + COMPLETION_TOKENS * 2.0) / 1e6


class FakeOpenAI:
    """``answer(n, body)`` writes the n-th answer (from 1); the default says which request it answers."""

    def __init__(self, answer: Callable[[int, dict[str, Any]], str] | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.answer = answer or (lambda n, body: f"I am not sure yet (answer {n}).")
        self.lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                with api.lock:
                    api.requests.append(body)
                    n = len(api.requests)
                payload = {
                    "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0,
                    "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": api.answer(n, body)}}],
                    "usage": {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS,
                              "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS},
                }
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
