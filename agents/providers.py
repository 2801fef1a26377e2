"""Model providers through their official SDKs: OpenAI, Anthropic, any OpenAI-compatible server, and
replay (recorded answers, in ``replay.py``).

Every provider does the same four things around one API call: merge call parameters, look in the
on-disk cache (as its ``cache_mode`` allows; the key holds the sample and the turn, so a loop that asks
the same thing at two turns gets two answers), call with retries (``retry.py``; the SDKs' own retries
are off), and account for tokens, latency and cost. The SDKs are imported when a client is first
needed, so importing ``warpgym.agents`` stays cheap and a machine without them can still replay.
"""

from __future__ import annotations

import logging
import os
import re
import time
from pathlib import Path
from typing import Any

from .api import CACHE_MODES, Completion, ProviderConfigError, ProviderError
from .cache import ResponseCache, cache_key
from .pricing import PriceTable
from .retry import RetryPolicy, acall_with_retry, call_with_retry

CALL_PARAMS = frozenset({
    "max_tokens", "temperature", "top_p", "seed", "stop", "reasoning_effort", "thinking_budget", "thinking",
    "verbosity", "extra_body",
})
"""Parameters that change the answer (part of the cache key). ``reasoning_effort``: OpenAI's
``reasoning_effort``, Anthropic's ``output_config.effort``. ``thinking_budget``: Anthropic's extended
thinking budget in tokens. ``thinking="adaptive"``: Anthropic's adaptive thinking. ``extra_body``:
anything else, sent as is (vLLM's ``chat_template_kwargs``, for example)."""

CLIENT_OPTIONS = frozenset({
    "api_key", "base_url", "timeout", "max_attempts", "retry_initial", "retry_max_wait", "retry_jitter",
    "max_retry_after", "cache_ttl_s", "record",
})
"""Options of the client and of the call machinery; they do not change the answer."""

log = logging.getLogger("warpgym.agents")

DEFAULT_MAX_TOKENS = 16384
DEFAULT_TIMEOUT_S = 900.0


def parse_spec(spec: str) -> tuple[str, str, str | None]:
    """``"openai:gpt-5"`` -> ("openai", "gpt-5", None); ``"openai-compatible:Qwen/Qwen3-32B@http://h:8000/v1"``
    -> ("openai-compatible", "Qwen/Qwen3-32B", "http://h:8000/v1"); ``"replay:runs/x.jsonl"``."""
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ProviderConfigError(f"provider spec {spec!r} must be KIND:MODEL "
                                  "(openai:MODEL, anthropic:MODEL, openai-compatible:MODEL@URL, replay:PATH)")
    if kind == "openai-compatible":
        m = re.match(r"^(?P<model>.+?)@(?P<url>https?://\S+)$", rest)
        if not m:
            raise ProviderConfigError(f"provider spec {spec!r}: write openai-compatible:MODEL@URL, "
                                      "e.g. openai-compatible:Qwen/Qwen3-32B@http://localhost:8000/v1")
        return kind, m.group("model"), m.group("url")
    if kind not in ("openai", "anthropic", "replay"):
        raise ProviderConfigError(f"unknown provider kind {kind!r} in {spec!r}; "
                                  "use openai, anthropic, openai-compatible or replay")
    return kind, rest, None


class BaseProvider:
    """Cache, retries and accounting around ``_request``/``_arequest`` (one API call) and ``_parse``."""

    kind = "base"
    key_variable: str | None = None

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 cache_dir: Path | None = None, use_cache: bool = True, prices: dict[str, Any] | None = None,
                 cache_mode: str | None = None, **params: Any) -> None:
        unknown = set(params) - CALL_PARAMS - CLIENT_OPTIONS
        if unknown:
            raise ProviderConfigError(
                f"unknown provider parameter(s) {sorted(unknown)}; call parameters are "
                f"{sorted(CALL_PARAMS)}, "
                f"client options {sorted(CLIENT_OPTIONS - {'api_key', 'base_url'})}; pass anything else in "
                "extra_body")
        self.model = model
        self.base_url = base_url
        self.api_key = self._resolve_key(api_key)
        self.params = {k: v for k, v in params.items() if k in CALL_PARAMS and v is not None}
        self.timeout = float(params.get("timeout", DEFAULT_TIMEOUT_S))
        self.retry = RetryPolicy(
            max_attempts=int(params.get("max_attempts", 6)),
            initial=float(params.get("retry_initial", 1.0)),
            max_wait=float(params.get("retry_max_wait", 60.0)),
            jitter=float(params.get("retry_jitter", 1.0)),
            max_retry_after=float(params.get("max_retry_after", 300.0)),
        )
        self.cache_mode = cache_mode or ("read-write" if use_cache else "off")
        if self.cache_mode not in CACHE_MODES:
            raise ProviderConfigError(f"unknown cache mode {self.cache_mode!r}; "
                                      f"use one of {', '.join(CACHE_MODES)}")
        self.cache = (ResponseCache(cache_dir, ttl_s=params.get("cache_ttl_s"))
                      if self.cache_mode != "off" else None)
        self.prices = PriceTable(prices)
        self._client: Any = None
        self._aclient: Any = None
        self._warned_unpriced = False

    # -- naming and configuration -------------------------------------------------------------
    @property
    def name(self) -> str:
        return f"{self.kind}:{self.model}"

    def _resolve_key(self, api_key: str | None) -> str:
        if api_key:
            return api_key
        if self.key_variable is None:
            return ""
        key = os.environ.get(self.key_variable, "")
        if not key:
            raise ProviderConfigError(
                f"{self.kind} provider needs an API key: set the environment variable {self.key_variable} "
                f"(or pass api_key=...)")
        return key

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    # -- the call ------------------------------------------------------------------------------
    def _cache_key(self, messages: list[dict[str, str]], params: dict[str, Any],
                   metadata: dict[str, Any] | None) -> str:
        meta = metadata or {}
        return cache_key({"provider": self.kind, "model": self.model, "base_url": self.base_url,
                          "messages": messages, "params": params, "sample": meta.get("sample", 0),
                          "turn": meta.get("turn")})

    def _from_cache(self, key: str | None) -> Completion | None:
        if self.cache is None or key is None or self.cache_mode == "write-only":
            return None
        hit = self.cache.get(key)
        if hit is None:
            return None
        completion = Completion.from_dict(hit)
        completion.cached = True
        completion.origin = "cached"
        completion.recorded_cost_usd = float(hit.get("cost_usd") or 0.0)
        completion.cost_usd = 0.0
        completion.latency_s = 0.0
        return completion

    def _finish(self, raw: Any, started: float, retries: int, key: str | None,
                messages: list[dict[str, str]], params: dict[str, Any]) -> Completion:
        completion = self._parse(raw)
        completion.latency_s = time.perf_counter() - started
        completion.provider = self.name
        completion.model = completion.model or self.model
        completion.retries = retries
        cost, priced = self.prices.cost(self.model, completion.input_tokens, completion.output_tokens,
                                        completion.cached_input_tokens)
        completion.cost_usd, completion.priced = cost, priced
        completion.origin, completion.recorded_cost_usd = "paid", cost
        if not priced and not self._warned_unpriced:
            self._warned_unpriced = True
            log.warning("%s: no price for model %r; its cost is counted as 0 (pass prices={...})",
                        self.name, self.model)
        if self.cache is not None and key is not None and self.cache_mode != "read-only":
            self.cache.put(key, completion.to_dict(), {"provider": self.name, "params": params,
                                                       "messages": messages})
        return completion

    def _prepare(self, messages: list[dict[str, str]], params: dict[str, Any]) -> dict[str, Any]:
        unknown = set(params) - CALL_PARAMS
        if unknown:
            raise ProviderConfigError(f"unknown call parameter(s) {sorted(unknown)}; "
                                      f"use {sorted(CALL_PARAMS)}")
        merged = {**self.params, **{k: v for k, v in params.items() if v is not None}}
        if not messages:
            raise ValueError("no messages to send")
        return merged

    def complete(self, messages: list[dict[str, str]], *, metadata: dict[str, Any] | None = None,
                 **params: Any) -> Completion:
        merged = self._prepare(messages, params)
        key = self._cache_key(messages, merged, metadata) if self.cache is not None else None
        hit = self._from_cache(key)
        if hit is not None:
            return hit
        started = time.perf_counter()
        try:
            raw, retries = call_with_retry(lambda: self._request(messages, merged), self.retry,
                                           self._transient(), self.name)
        except Exception as exc:  # the SDK's error, with the status and message kept
            raise self._error(exc) from exc
        return self._finish(raw, started, retries, key, messages, merged)

    async def acomplete(self, messages: list[dict[str, str]], *, metadata: dict[str, Any] | None = None,
                        **params: Any) -> Completion:
        merged = self._prepare(messages, params)
        key = self._cache_key(messages, merged, metadata) if self.cache is not None else None
        hit = self._from_cache(key)
        if hit is not None:
            return hit
        started = time.perf_counter()
        try:
            raw, retries = await acall_with_retry(lambda: self._arequest(messages, merged), self.retry,
                                                  self._transient(), self.name)
        except Exception as exc:
            raise self._error(exc) from exc
        return self._finish(raw, started, retries, key, messages, merged)

    def _error(self, exc: Exception) -> ProviderError:
        from .retry import status_code

        code = status_code(exc)
        what = f"HTTP {code}" if code is not None else type(exc).__name__
        err = ProviderError(f"{self.name}: {what}: {str(exc)[:2000]}")
        err.status_code = code  # type: ignore[attr-defined]
        return err

    # -- to implement --------------------------------------------------------------------------
    def _transient(self) -> tuple[type[BaseException], ...]:
        return ()

    def _request(self, messages: list[dict[str, str]], params: dict[str, Any]) -> Any:
        raise NotImplementedError

    async def _arequest(self, messages: list[dict[str, str]], params: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _parse(self, raw: Any) -> Completion:
        raise NotImplementedError


def _get(obj: Any, name: str, default: Any = None) -> Any:
    """Attribute or key, for SDK objects and for the extra fields servers add."""
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    value = getattr(obj, name, None)
    if value is None:
        extra = getattr(obj, "model_extra", None) or {}
        value = extra.get(name)
    return default if value is None else value


class OpenAIProvider(BaseProvider):
    """OpenAI's Chat Completions API (``openai`` SDK). Reasoning models take ``reasoning_effort``; their
    reasoning tokens come from ``usage.completion_tokens_details``."""

    kind = "openai"
    key_variable = "OPENAI_API_KEY"
    max_tokens_field = "max_completion_tokens"

    def _client_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"api_key": self.api_key, "timeout": self.timeout, "max_retries": 0}
        if self.base_url:
            kw["base_url"] = self.base_url
        return kw

    def _transient(self) -> tuple[type[BaseException], ...]:
        import openai

        return (openai.APIConnectionError,)

    def _body(self, messages: list[dict[str, str]], params: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages,
                                self.max_tokens_field: int(params.get("max_tokens", DEFAULT_MAX_TOKENS))}
        for name in ("temperature", "top_p", "seed", "stop", "reasoning_effort", "verbosity", "extra_body"):
            if name in params:
                body[name] = params[name]
        if "thinking_budget" in params or "thinking" in params:
            raise ProviderConfigError(f"{self.name}: thinking_budget/thinking are Anthropic parameters; "
                                      "use reasoning_effort (or extra_body for a server's own options)")
        return body

    def _request(self, messages: list[dict[str, str]], params: dict[str, Any]) -> Any:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(**self._client_kwargs())
        return self._client.chat.completions.create(**self._body(messages, params))

    async def _arequest(self, messages: list[dict[str, str]], params: dict[str, Any]) -> Any:
        if self._aclient is None:
            import openai

            self._aclient = openai.AsyncOpenAI(**self._client_kwargs())
        return await self._aclient.chat.completions.create(**self._body(messages, params))

    def _parse(self, raw: Any) -> Completion:
        choices = _get(raw, "choices", [])
        if not choices:
            raise ProviderError(f"{self.name}: the response had no choices")
        choice = choices[0]
        message = _get(choice, "message")
        usage = _get(raw, "usage")
        details = _get(usage, "completion_tokens_details")
        prompt_details = _get(usage, "prompt_tokens_details")
        reasoning = _get(message, "reasoning_content") or _get(message, "reasoning")
        return Completion(
            text=_get(message, "content", "") or "",
            input_tokens=int(_get(usage, "prompt_tokens", 0)),
            output_tokens=int(_get(usage, "completion_tokens", 0)),
            reasoning_tokens=int(_get(details, "reasoning_tokens", 0)),
            cached_input_tokens=int(_get(prompt_details, "cached_tokens", 0)),
            model=_get(raw, "model", self.model) or self.model,
            stop_reason=_get(choice, "finish_reason"),
            reasoning=reasoning if isinstance(reasoning, str) else None,
        )


class OpenAICompatibleProvider(OpenAIProvider):
    """vLLM, SGLang, Ollama, llama.cpp and the like, through the ``openai`` SDK at ``base_url``. No key is
    needed unless the server wants one (``OPENAI_COMPATIBLE_API_KEY`` or ``api_key=``)."""

    kind = "openai-compatible"
    key_variable = None
    max_tokens_field = "max_tokens"

    def _resolve_key(self, api_key: str | None) -> str:
        return api_key or os.environ.get("OPENAI_COMPATIBLE_API_KEY", "") or "EMPTY"

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.model}@{self.base_url}"


class AnthropicProvider(BaseProvider):
    """Anthropic's Messages API (``anthropic`` SDK). ``thinking_budget=N`` turns on extended thinking with
    that budget, ``thinking="adaptive"`` lets the model choose, ``reasoning_effort`` sets
    ``output_config.effort``; thinking tokens come from ``usage.output_tokens_details``."""

    kind = "anthropic"
    key_variable = "ANTHROPIC_API_KEY"

    def _client_kwargs(self) -> dict[str, Any]:
        # An explicit timeout also stops the SDK refusing long non-streaming requests up front.
        kw: dict[str, Any] = {"api_key": self.api_key, "timeout": self.timeout, "max_retries": 0}
        if self.base_url:
            kw["base_url"] = self.base_url
        return kw

    def _transient(self) -> tuple[type[BaseException], ...]:
        import anthropic

        return (anthropic.APIConnectionError,)

    def _body(self, messages: list[dict[str, str]], params: dict[str, Any]) -> dict[str, Any]:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        turns = [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"]
        budget = params.get("thinking_budget")
        max_tokens = int(params.get("max_tokens", DEFAULT_MAX_TOKENS + (int(budget) if budget else 0)))
        body: dict[str, Any] = {"model": self.model, "messages": turns, "max_tokens": max_tokens}
        if system:
            body["system"] = system
        if budget:
            if max_tokens <= int(budget):
                raise ProviderConfigError(f"{self.name}: max_tokens ({max_tokens}) must exceed "
                                          f"thinking_budget ({budget}); thinking counts toward max_tokens")
            body["thinking"] = {"type": "enabled", "budget_tokens": int(budget)}
        elif params.get("thinking"):
            thinking = params["thinking"]
            body["thinking"] = {"type": thinking} if isinstance(thinking, str) else thinking
        if params.get("reasoning_effort"):
            body["output_config"] = {"effort": params["reasoning_effort"]}
        for name in ("temperature", "top_p"):
            if name in params:
                body[name] = params[name]
        if "stop" in params:
            stop = params["stop"]
            body["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
        if "extra_body" in params:
            body["extra_body"] = params["extra_body"]
        return body

    def _request(self, messages: list[dict[str, str]], params: dict[str, Any]) -> Any:
        if self._client is None:
            import anthropic

            self._client = anthropic.Anthropic(**self._client_kwargs())
        return self._client.messages.create(**self._body(messages, params))

    async def _arequest(self, messages: list[dict[str, str]], params: dict[str, Any]) -> Any:
        if self._aclient is None:
            import anthropic

            self._aclient = anthropic.AsyncAnthropic(**self._client_kwargs())
        return await self._aclient.messages.create(**self._body(messages, params))

    def _parse(self, raw: Any) -> Completion:
        texts: list[str] = []
        thoughts: list[str] = []
        for block in _get(raw, "content", []) or []:
            kind = _get(block, "type")
            if kind == "text":
                texts.append(_get(block, "text", ""))
            elif kind == "thinking":
                thoughts.append(_get(block, "thinking", ""))
        usage = _get(raw, "usage")
        cache_read = int(_get(usage, "cache_read_input_tokens", 0))
        cache_write = int(_get(usage, "cache_creation_input_tokens", 0))
        output = int(_get(usage, "output_tokens", 0))
        thinking = _get(_get(usage, "output_tokens_details"), "thinking_tokens")
        if thinking is None and thoughts:  # older API versions: estimate from the returned text
            thinking = min(sum(len(t) for t in thoughts) // 4, output)
        return Completion(
            text="".join(texts),
            input_tokens=int(_get(usage, "input_tokens", 0)) + cache_read + cache_write,
            output_tokens=output,
            reasoning_tokens=int(thinking or 0),
            cached_input_tokens=cache_read,
            model=_get(raw, "model", self.model) or self.model,
            stop_reason=_get(raw, "stop_reason"),
            reasoning="\n\n".join(thoughts) or None,
        )


PROVIDERS: dict[str, type[BaseProvider]] = {
    "openai": OpenAIProvider,
    "anthropic": AnthropicProvider,
    "openai-compatible": OpenAICompatibleProvider,
}


def make_provider(spec: str, *, cache_dir: Path | None = None, use_cache: bool = True,
                  prices: dict[str, Any] | None = None, cache_mode: str | None = None, **params: Any) -> Any:
    """See ``warpgym.agents.api.make_provider``. ``record=PATH`` wraps the provider so that every answer
    is also appended to a replay file."""
    kind, model, url = parse_spec(spec)
    record = params.pop("record", None)
    if kind == "replay":
        from .replay import ReplayProvider

        provider: Any = ReplayProvider(model, **params)
    else:
        base_url = params.pop("base_url", None) or url
        provider = PROVIDERS[kind](model, base_url=base_url, cache_dir=cache_dir, use_cache=use_cache,
                                   prices=prices, cache_mode=cache_mode, **params)
    if record:
        from .replay import RecordingProvider

        provider = RecordingProvider(provider, Path(record))
    return provider
