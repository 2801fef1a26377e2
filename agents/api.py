"""The public contract of ``warpgym.agents``: what the experiment runner codes against.

Kept free of heavy imports (no SDKs, no langgraph) so that the runner can import the types
cheaply; ``make_provider`` and ``run_episode`` import their implementations on first call.
Fields may be added here over time; none is removed or renamed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from warpgym.prompts import CONTEXT_LEVELS

if TYPE_CHECKING:
    from warpgym.env import KernelEnv

HISTORY_MODES: tuple[str, ...] = ("full", "last")
PHASES: tuple[str, ...] = ("generate", "fix", "optimise")
ORIGINS: tuple[str, ...] = ("paid", "cached", "replayed")
"""Where a model answer came from: a call that was billed, the on-disk response cache, or a recording."""
CACHE_MODES: tuple[str, ...] = ("off", "read-write", "read-only", "write-only")
"""How a provider uses the response cache: ``read-only`` never writes, ``write-only`` never reads (every
call is paid, and kept for a later ``read-only`` or ``read-write`` run)."""


@dataclass(frozen=True)
class EpisodeSettings:
    """What an episode plays: the task, the loop and its arguments, the prompt's context and history,
    the turn budget, the sample (the environment's seed) and where candidates are judged.

    ``loop_args`` override the loop's registered defaults (``LOOPS[loop].defaults``), e.g.
    ``{"keep_optimising": True}`` for fix-retry. ``agent`` names this loop-with-arguments where several
    share one loop (an experiment's agent label); the model calls carry it as ``metadata["loop"]``, so
    a replay file tells the agents apart. A bad context, history or turn budget is a ``ValueError``
    here, before any work starts.
    """

    task: str
    loop: str
    context: str = "none"
    max_turns: int = 4
    history: str = "full"
    sample: int = 0
    target: str = "sm_90a"
    device: str = "auto"
    loop_args: Mapping[str, Any] = field(default_factory=dict)
    context_text: str | None = None
    """A level of the experiment file's, rendered (``prompts.level_text``); ``context`` is then its
    name. None: ``context`` is a built-in level."""
    agent: str = ""

    def __post_init__(self) -> None:
        if self.context_text is not None:
            if not self.context:
                raise ValueError("a context level with its own text needs a name")
        elif self.context not in CONTEXT_LEVELS:
            raise ValueError(f"unknown context level {self.context!r}; use one of {CONTEXT_LEVELS}")
        if self.history not in HISTORY_MODES:
            raise ValueError(f"unknown history mode {self.history!r}; use one of {HISTORY_MODES}")
        if self.max_turns < 1:
            raise ValueError("max_turns must be at least 1")


class ProviderConfigError(RuntimeError):
    """A provider cannot be built (missing API key, bad spec); raised before any work starts."""


class ProviderError(RuntimeError):
    """A provider call failed for good (a 4xx other than 429, or retries exhausted)."""


@dataclass
class Completion:
    """One model answer with its accounting.

    ``cost_usd`` is what this call paid: 0 for an answer from the response cache or a recording, whose
    cost when it was first paid is ``recorded_cost_usd``. ``origin`` is one of ``ORIGINS``."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    cached: bool = False
    model: str = ""
    provider: str = ""
    cached_input_tokens: int = 0
    stop_reason: str | None = None
    reasoning: str | None = None
    """Visible reasoning or thinking text where the API returns it (not part of ``text``)."""
    priced: bool = True
    """False when the model had no entry in the price table (``cost_usd`` is then 0, not the cost)."""
    retries: int = 0
    origin: str = "paid"
    recorded_cost_usd: float | None = None
    """What the answer cost when it was paid (for a cached or replayed answer; equal to ``cost_usd`` for
    a paid one); None when nobody recorded it."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Completion:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@runtime_checkable
class Provider(Protocol):
    """A chat model. ``messages`` are ``{"role": "system"|"user"|"assistant", "content": str}``.

    ``metadata`` ({"task", "sample", "turn", "loop", "context"}) is not sent to the model; it lets
    the replay provider find a recorded answer offline and the recorder file what it saw.
    """

    name: str

    def complete(self, messages: list[dict[str, str]], *, metadata: dict[str, Any] | None = None,
                 **params: Any) -> Completion: ...

    async def acomplete(self, messages: list[dict[str, str]], *, metadata: dict[str, Any] | None = None,
                        **params: Any) -> Completion: ...


@dataclass
class TurnRecord:
    """What happened at one turn: the prompt sent, the answer, what was extracted, the verdict."""

    turn: int
    phase: str
    messages: list[dict[str, Any]]
    response: str
    candidate: str | None
    extraction_problem: str | None
    feedback: str
    result: dict[str, Any] | None
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    cached: bool = False
    model: str = ""
    eval_s: float = 0.0
    attachments: dict[str, str] = field(default_factory=dict)
    """The files the candidate carried beside its module (file name -> text); empty for most."""
    origin: str = "paid"
    """``Completion.origin`` of this turn's answer: paid, cached or replayed (``cost_usd``: what was paid)."""
    recorded_cost_usd: float | None = None

    @property
    def correct(self) -> bool:
        return bool(self.result and self.result.get("correct"))

    @property
    def compiled(self) -> bool:
        return bool(self.result and self.result.get("compiled"))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TurnRecord:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class EpisodeResult:
    """One episode: every turn in order, its best turn (``agents.best``; None when no turn was correct),
    and whether it was solved."""

    task: str
    loop: str
    provider: str
    context: str
    turns: list[TurnRecord] = field(default_factory=list)
    best: TurnRecord | None = None
    solved: bool = False
    sample: int = 0
    history: str = "full"

    @property
    def input_tokens(self) -> int:
        return sum(t.input_tokens for t in self.turns)

    @property
    def output_tokens(self) -> int:
        return sum(t.output_tokens for t in self.turns)

    @property
    def cost_usd(self) -> float:
        return sum(t.cost_usd for t in self.turns)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["turns"] = [t.to_dict() for t in self.turns]
        d["best"] = self.best.to_dict() if self.best else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EpisodeResult:
        names = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        kw["turns"] = [TurnRecord.from_dict(t) for t in d.get("turns", [])]
        kw["best"] = TurnRecord.from_dict(d["best"]) if d.get("best") else None
        return cls(**kw)


@dataclass(frozen=True)
class LoopSpec:
    """A registered loop: its builder (returns a compiled LangGraph graph) and its default arguments,
    recorded so that a run can be rebuilt from its log alone."""

    name: str
    build: Callable[..., Any]
    description: str = ""
    defaults: dict[str, Any] = field(default_factory=dict)


class LoopRegistry(Mapping[str, LoopSpec]):
    """``LOOPS["fix-retry"]``. Loops register with ``@LOOPS.register("name", **defaults)`` in
    ``agents/loops.py``, which is imported on first lookup so that importing this module stays cheap."""

    def __init__(self) -> None:
        self._specs: dict[str, LoopSpec] = {}
        self._loaded = False

    def register(self, name: str, *, description: str = "", **defaults: Any) -> Callable[[Callable[..., Any]],
                                                                                          Callable[..., Any]]:
        def decorator(build: Callable[..., Any]) -> Callable[..., Any]:
            if name in self._specs and not _same_source(self._specs[name].build, build):
                raise ValueError(f"loop {name!r} is already registered")
            doc = description or (build.__doc__ or "").strip().split("\n")[0]
            self._specs[name] = LoopSpec(name, build, doc, dict(defaults))
            return build

        return decorator

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            from . import loops  # noqa: F401 - registers the built-in loops

    def __getitem__(self, name: str) -> LoopSpec:
        self._load()
        try:
            return self._specs[name]
        except KeyError:
            raise KeyError(f"unknown loop {name!r}; known: {', '.join(sorted(self._specs))}") from None

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(self._specs)

    def __len__(self) -> int:
        self._load()
        return len(self._specs)


def _same_source(a: Callable[..., Any], b: Callable[..., Any]) -> bool:
    """The same function defined again: its file imported a second time (under another module name, or
    reloaded), which replaces the loop rather than clashing with it."""
    code_a, code_b = getattr(a, "__code__", None), getattr(b, "__code__", None)
    return (code_a is not None and code_b is not None and code_a.co_filename == code_b.co_filename
            and a.__qualname__ == b.__qualname__)


LOOPS = LoopRegistry()


def make_provider(spec: str, *, cache_dir: Path | None = None, use_cache: bool = True,
                  prices: dict[str, Any] | None = None, cache_mode: str | None = None,
                  **params: Any) -> Provider:
    """Build a provider from ``openai:MODEL``, ``anthropic:MODEL``, ``openai-compatible:MODEL@URL`` or
    ``replay:PATH``. ``params`` are default call parameters (e.g. ``reasoning_effort="high"``,
    ``thinking_budget=8000``, ``max_tokens``, ``temperature``) plus client options (``timeout``,
    ``max_attempts``, ``api_key``, ``base_url``, ``record``). ``cache_mode`` is one of ``CACHE_MODES``
    (default ``read-write``, or ``off`` with ``use_cache=False``). A missing key raises
    ``ProviderConfigError`` here."""
    from .providers import make_provider as _make

    return _make(spec, cache_dir=cache_dir, use_cache=use_cache, prices=prices, cache_mode=cache_mode,
                 **params)


def run_episode(settings: EpisodeSettings, *, provider: Provider, env: KernelEnv | None = None,
                on_turn: Callable[[TurnRecord], None] | None = None, resume: list[TurnRecord] | None = None
                ) -> EpisodeResult:
    """Play one episode as ``settings`` say. ``on_turn`` is called as each turn finishes; ``resume``
    replays finished turns into the state (no model call, no evaluation) and continues. ``env``, when
    given, is reset and used but not closed (share one across episodes of a task); otherwise one is
    made for ``settings.target`` and ``settings.device`` and closed at the end."""
    from .loops import run_episode as _run

    return _run(settings, provider=provider, env=env, on_turn=on_turn, resume=resume)


async def arun_episode(settings: EpisodeSettings, *, provider: Provider, env: KernelEnv | None = None,
                       on_turn: Callable[[TurnRecord], None] | None = None,
                       resume: list[TurnRecord] | None = None) -> EpisodeResult:
    """``run_episode`` for asyncio (``provider.acomplete``; the evaluation runs in a worker thread)."""
    from .loops import arun_episode as _arun

    return await _arun(settings, provider=provider, env=env, on_turn=on_turn, resume=resume)


__all__ = [
    "CACHE_MODES", "CONTEXT_LEVELS", "HISTORY_MODES", "LOOPS", "ORIGINS", "PHASES", "Completion",
    "EpisodeResult", "EpisodeSettings",
    "LoopRegistry", "LoopSpec", "Provider",
    "ProviderConfigError", "ProviderError", "TurnRecord", "arun_episode", "make_provider", "run_episode",
]
