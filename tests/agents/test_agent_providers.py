"""The OpenAI and Anthropic SDK paths against a loopback server that speaks their wire formats.

No test reaches the network: every client points at 127.0.0.1. Retry waits are kept tiny
(``retry_initial`` of a millisecond, no jitter) except where a test asks the server for a
Retry-After, which must then be seen in the gap between the two requests.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from warpgym.agents import Completion, ProviderConfigError, ProviderError, make_provider
from warpgym.agents.pricing import PriceTable
from warpgym.agents.providers import parse_spec
from warpgym.agents.replay import ReplayMissing, write_replay

FAST = {"retry_initial": 0.001, "retry_jitter": 0.0, "retry_max_wait": 0.01, "max_attempts": 4, "timeout": 10}
MESSAGES = [{"role": "system", "content": "You write kernels."},
            {"role": "user", "content": "Add two vectors."}]


def openai_body(text: str = "```python\nx = 1\n```") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-5-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500,
                  "completion_tokens_details": {"reasoning_tokens": 300},
                  "prompt_tokens_details": {"cached_tokens": 200}},
    }


def anthropic_body(text: str = "```python\nx = 1\n```") -> dict[str, Any]:
    return {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": [{"type": "thinking", "thinking": "Think about masks.", "signature": "sig"},
                    {"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 800, "output_tokens": 400, "cache_read_input_tokens": 0,
                  "cache_creation_input_tokens": 0, "output_tokens_details": {"thinking_tokens": 150}},
    }


def openai_error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


class FakeAPI:
    """A scripted server: each POST takes the next (status, headers, body) from the script and is logged."""

    def __init__(self) -> None:
        self.script: list[tuple[int, dict[str, str], dict[str, Any]]] = []
        self.requests: list[dict[str, Any]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                api.requests.append({"path": self.path, "headers": headers, "body": body,
                                     "time": time.monotonic()})
                status, headers, payload = api.script.pop(0) if api.script else (
                    500, {}, {"error": {"message": "script exhausted"}})
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    server = FakeAPI()
    yield server
    server.close()


def openai(api: FakeAPI, tmp_path: Path, **kw: Any) -> Any:
    kw = {**FAST, **kw}
    return make_provider("openai:gpt-5-mini", base_url=f"{api.url}/v1", api_key="sk-test",
                         cache_dir=tmp_path / "cache", **kw)


def anthropic(api: FakeAPI, tmp_path: Path, **kw: Any) -> Any:
    kw = {**FAST, **kw}
    return make_provider("anthropic:claude-haiku-4-5", base_url=api.url, api_key="sk-ant-test",
                         cache_dir=tmp_path / "cache", **kw)


# -- OpenAI ------------------------------------------------------------------------------------------
def test_openai_429_then_success_honours_retry_after(api: FakeAPI, tmp_path: Path) -> None:
    api.script = [(429, {"retry-after-ms": "250"}, openai_error(429, "Rate limit reached")),
                  (200, {}, openai_body("```python\ndef add(x, y):\n    return x\n```"))]
    provider = openai(api, tmp_path, reasoning_effort="high", max_tokens=4096)
    out = provider.complete(MESSAGES, metadata={"task": "math/add", "sample": 0, "turn": 1})
    assert len(api.requests) == 2
    assert api.requests[1]["time"] - api.requests[0]["time"] >= 0.24  # waited as told, not 1 ms
    body = api.requests[1]["body"]
    assert api.requests[1]["path"] == "/v1/chat/completions"
    assert body["model"] == "gpt-5-mini" and body["messages"] == MESSAGES
    assert body["reasoning_effort"] == "high" and body["max_completion_tokens"] == 4096
    assert api.requests[1]["headers"]["authorization"] == "Bearer sk-test"
    assert out.text.startswith("```python") and out.retries == 1 and not out.cached
    tokens = (out.input_tokens, out.output_tokens, out.reasoning_tokens, out.cached_input_tokens)
    assert tokens == (1000, 500, 300, 200)
    # gpt-5-mini: 0.25 in, 0.025 cached in, 2.00 out per million tokens.
    assert out.cost_usd == pytest.approx((800 * 0.25 + 200 * 0.025 + 500 * 2.0) / 1e6)
    assert out.priced and out.provider == "openai:gpt-5-mini" and out.latency_s > 0


def test_openai_400_is_not_retried(api: FakeAPI, tmp_path: Path) -> None:
    api.script = [(400, {}, openai_error(400, "maximum context length exceeded")),
                  (200, {}, openai_body())]
    with pytest.raises(ProviderError, match="400") as err:
        openai(api, tmp_path).complete(MESSAGES)
    assert len(api.requests) == 1
    assert err.value.status_code == 400  # type: ignore[attr-defined]
    assert "maximum context length" in str(err.value)


def test_openai_5xx_retried_and_cache_makes_rerun_free(api: FakeAPI, tmp_path: Path) -> None:
    api.script = [(503, {}, openai_error(503, "overloaded")), (200, {}, openai_body("first"))]
    meta = {"task": "math/add", "sample": 0, "turn": 1}
    first = openai(api, tmp_path).complete(MESSAGES, metadata=meta)
    assert first.text == "first" and first.retries == 1 and len(api.requests) == 2
    again = openai(api, tmp_path).complete(MESSAGES, metadata=meta)  # a fresh provider, same cache dir
    assert again.cached and again.text == "first" and again.cost_usd == 0.0
    assert again.input_tokens == first.input_tokens
    assert len(api.requests) == 2
    # Another sample of the same prompt is another answer, not the cached one.
    api.script = [(200, {}, openai_body("second sample"))]
    other = openai(api, tmp_path).complete(MESSAGES, metadata={**meta, "sample": 1})
    assert other.text == "second sample" and len(api.requests) == 3
    # Other parameters, another key; and the cache can be turned off.
    api.script = [(200, {}, openai_body("hot")), (200, {}, openai_body("uncached"))]
    assert openai(api, tmp_path).complete(MESSAGES, metadata=meta, temperature=0.7).text == "hot"
    assert openai(api, tmp_path, use_cache=False).complete(MESSAGES, metadata=meta).text == "uncached"
    assert len(api.requests) == 5


def test_openai_async_path(api: FakeAPI, tmp_path: Path) -> None:
    api.script = [(429, {"retry-after": "0"}, openai_error(429, "slow down")),
                  (200, {}, openai_body("async"))]
    out = asyncio.run(openai(api, tmp_path).acomplete(MESSAGES))
    assert out.text == "async" and out.retries == 1 and len(api.requests) == 2


def test_openai_compatible_needs_no_key_and_sends_max_tokens(api: FakeAPI, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    api.script = [(200, {}, openai_body("local"))]
    provider = make_provider(f"openai-compatible:Qwen/Qwen3-8B@{api.url}/v1", cache_dir=tmp_path,
                             use_cache=False,
                             max_tokens=1000, extra_body={"chat_template_kwargs": {"enable_thinking": True}},
                             **FAST)
    out = provider.complete(MESSAGES)
    body = api.requests[0]["body"]
    assert body["max_tokens"] == 1000 and "max_completion_tokens" not in body
    assert body["chat_template_kwargs"] == {"enable_thinking": True}
    assert out.text == "local" and not out.priced and out.cost_usd == 0.0
    assert provider.name == f"openai-compatible:Qwen/Qwen3-8B@{api.url}/v1"


def test_connection_errors_are_retried_then_reported(tmp_path: Path) -> None:
    provider = make_provider("openai:gpt-5", base_url="http://127.0.0.1:9/v1", api_key="sk-test",
                             use_cache=False, **{**FAST, "max_attempts": 2})
    started = time.monotonic()
    with pytest.raises(ProviderError, match="APIConnectionError"):
        provider.complete(MESSAGES)
    assert time.monotonic() - started < 10


# -- Anthropic ---------------------------------------------------------------------------------------
def test_anthropic_429_then_success_with_thinking(api: FakeAPI, tmp_path: Path) -> None:
    api.script = [(429, {"retry-after": "0.25"}, anthropic_error("rate_limit_error", "Number of requests")),
                  (200, {}, anthropic_body("```python\ndef add(x, y):\n    return x\n```"))]
    provider = anthropic(api, tmp_path, thinking_budget=2048)
    out = provider.complete(MESSAGES, metadata={"task": "math/add", "sample": 0, "turn": 1})
    assert len(api.requests) == 2
    assert api.requests[1]["time"] - api.requests[0]["time"] >= 0.24
    req = api.requests[1]
    assert req["path"] == "/v1/messages"
    assert "sk-ant-test" in (req["headers"].get("x-api-key", "") + req["headers"].get("authorization", ""))
    body = req["body"]
    assert body["system"] == "You write kernels."
    assert body["messages"] == [{"role": "user", "content": "Add two vectors."}]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and body["max_tokens"] > 2048
    assert out.text.startswith("```python") and out.reasoning == "Think about masks."
    assert (out.input_tokens, out.output_tokens, out.reasoning_tokens) == (800, 400, 150)
    assert out.cost_usd == pytest.approx((800 * 1.0 + 400 * 5.0) / 1e6) and out.retries == 1


def test_anthropic_400_is_not_retried(api: FakeAPI, tmp_path: Path) -> None:
    api.script = [(400, {}, anthropic_error("invalid_request_error", "prompt is too long")),
                  (200, {}, anthropic_body())]
    with pytest.raises(ProviderError, match="prompt is too long"):
        anthropic(api, tmp_path).complete(MESSAGES)
    assert len(api.requests) == 1


def test_anthropic_overloaded_529_retried_async(api: FakeAPI, tmp_path: Path) -> None:
    api.script = [(529, {}, anthropic_error("overloaded_error", "Overloaded")),
                  (200, {}, anthropic_body("ok"))]
    out = asyncio.run(anthropic(api, tmp_path, reasoning_effort="low").acomplete(MESSAGES))
    assert out.text == "ok" and len(api.requests) == 2
    assert api.requests[1]["body"]["output_config"] == {"effort": "low"}


# -- configuration -----------------------------------------------------------------------------------
def test_missing_keys_fail_before_any_work(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ProviderConfigError, match="OPENAI_API_KEY"):
        make_provider("openai:gpt-5")
    with pytest.raises(ProviderConfigError, match="ANTHROPIC_API_KEY"):
        make_provider("anthropic:claude-opus-4-5")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    assert make_provider("openai:gpt-5", use_cache=False).name == "openai:gpt-5"


def test_specs_and_parameters_are_checked() -> None:
    assert parse_spec("openai-compatible:meta/llama@http://h:8000/v1") == ("openai-compatible", "meta/llama",
                                                                          "http://h:8000/v1")
    for bad in ("gpt-5", "cohere:x", "openai-compatible:model-without-url", "openai:"):
        with pytest.raises(ProviderConfigError):
            parse_spec(bad)
    with pytest.raises(ProviderConfigError, match="temprature"):
        make_provider("openai:gpt-5", api_key="k", temprature=0.2)


def test_price_table_override(api: FakeAPI, tmp_path: Path) -> None:
    api.script = [(200, {}, openai_body())]
    provider = openai(api, tmp_path, use_cache=False)
    provider = make_provider("openai:gpt-5-mini", base_url=f"{api.url}/v1", api_key="k", use_cache=False,
                             prices={"gpt-5-mini": {"input": 1.0, "output": 10.0, "cached_input": 0.5}},
                             **FAST)
    out = provider.complete(MESSAGES)
    assert out.cost_usd == pytest.approx((800 * 1.0 + 200 * 0.5 + 500 * 10.0) / 1e6)


def test_prices_match_exact_names_and_dated_versions_only() -> None:
    table = PriceTable({"my-model": (1.0, 2.0)})
    assert table.lookup("gpt-5-mini-2025-08-07") == table.lookup("gpt-5-mini") != table.lookup("gpt-5")
    assert table.lookup("gpt-5.4") is None and table.lookup("claude-opus-4-6") is None
    assert table.cost("vendor/my-model", 1_000_000, 500_000) == (2.0, True)
    assert table.cost("unknown", 10, 10) == (0.0, False)


# -- replay and recording ----------------------------------------------------------------------------
def test_record_then_replay(api: FakeAPI, tmp_path: Path) -> None:
    api.script = [(200, {}, openai_body("recorded answer"))]
    record = tmp_path / "run.jsonl"
    live = make_provider("openai:gpt-5-mini", base_url=f"{api.url}/v1", api_key="k", use_cache=False,
                         record=record, **FAST)
    meta = {"task": "math/add", "sample": 2, "turn": 1, "loop": "one-shot", "context": "none"}
    first = live.complete(MESSAGES, metadata=meta)
    replay = make_provider(f"replay:{record}")
    again = replay.complete(MESSAGES, metadata=meta)
    assert again.text == "recorded answer" and again.input_tokens == first.input_tokens
    assert (first.origin, again.origin) == ("paid", "replayed")
    assert first.cost_usd > 0 and again.cost_usd == 0.0
    assert again.recorded_cost_usd == pytest.approx(first.cost_usd)
    with pytest.raises(ReplayMissing, match="turn=2"):
        replay.complete(MESSAGES, metadata={**meta, "turn": 2})
    with pytest.raises(ReplayMissing):  # the line is for one-shot only
        replay.complete(MESSAGES, metadata={**meta, "loop": "fix-retry"})


def test_cache_modes_read_and_write_as_named(api: FakeAPI, tmp_path: Path) -> None:
    meta = {"task": "math/add", "sample": 0, "turn": 1}
    api.script = [(200, {}, openai_body(f"answer {i}")) for i in range(1, 6)]
    assert openai(api, tmp_path, cache_mode="read-only").complete(MESSAGES, metadata=meta).text == "answer 1"
    assert not (tmp_path / "cache").exists()  # read-only wrote nothing
    paid = openai(api, tmp_path, cache_mode="write-only").complete(MESSAGES, metadata=meta)
    assert (paid.text, paid.origin) == ("answer 2", "paid")
    again = openai(api, tmp_path, cache_mode="write-only").complete(MESSAGES, metadata=meta)
    assert again.text == "answer 3"  # write-only never reads what it wrote
    hit = openai(api, tmp_path, cache_mode="read-only").complete(MESSAGES, metadata=meta)
    assert (hit.text, hit.origin, hit.cost_usd) == ("answer 3", "cached", 0.0)
    assert again.cost_usd > 0 and hit.recorded_cost_usd == pytest.approx(again.cost_usd)
    # The same messages at another turn are another answer (a loop drawing independent answers).
    later = openai(api, tmp_path).complete(MESSAGES, metadata={**meta, "turn": 2})
    assert (later.text, later.origin) == ("answer 4", "paid") and len(api.requests) == 4
    with pytest.raises(ProviderConfigError, match="unknown cache mode 'sometimes'"):
        openai(api, tmp_path, cache_mode="sometimes")


def test_replay_prefers_specific_and_later_lines(tmp_path: Path) -> None:
    path = write_replay(tmp_path / "r.jsonl", [
        {"task": "t/a", "turn": 1, "text": "generic"},
        {"task": "t/a", "turn": 1, "text": "for full context", "context": "full"},
        {"task": "t/a", "turn": 1, "text": "generic, later"},
    ])
    replay = make_provider(f"replay:{path}")
    def ask(**meta: Any) -> str:
        return replay.complete(MESSAGES, metadata={"task": "t/a", "turn": 1, **meta}).text

    assert ask(context="none") == "generic, later"
    assert ask(context="full") == "for full context"
    assert isinstance(replay.complete(MESSAGES, metadata={"task": "t/a", "turn": 1}), Completion)
