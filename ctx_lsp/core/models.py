"""The model registry: context length, maximum output and tokenizer family of common models.

Calibration factors scale counts from the encoding we can load to the model's own tokenizer.
They start conservative (better to plan a little short than to overflow) and are replaced by
factors learned from usage reports. Sources: OpenAI models use o200k_base/cl100k_base (exact when
the encoding loads); measured against Anthropic's counting API, cl100k under-counts Claude traffic
by about 40% overall (up to 65% on tool calls), so Claude starts at 1.40; Roo Code uses ×1.5 for
every model it cannot count exactly. For the others (Gemini's SentencePiece, Llama 3's 128k
tiktoken vocabulary, Mistral's Tekken, Qwen, DeepSeek) we start from a conservative 1.10–1.20.
"""

from __future__ import annotations

import msgspec

PRICES_AS_OF = "2025-10"  # the providers' public list prices, per million tokens, taken then


class Prices(msgspec.Struct, frozen=True, kw_only=True):
    """US dollars per million tokens. ``cache_read``: input the provider served from its prompt
    cache; ``cache_write``: input it stored in the cache (Anthropic charges a premium; OpenAI
    none, so it is the input price)."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    as_of: str = PRICES_AS_OF

    def cost(self, fresh: int, cache_read: int, cache_write: int, output: int) -> float:
        return (
            fresh * self.input + cache_read * self.cache_read + cache_write * self.cache_write + output * self.output
        ) / 1e6


class ModelSpec(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    provider: str
    context_length: int
    max_output: int
    encoding: str  # the tiktoken encoding closest to the model's tokenizer
    native: bool  # True when ``encoding`` *is* the model's tokenizer
    calibration: float = 1.0
    aliases: tuple[str, ...] = ()
    prices: Prices | None = None


def _openai(i: float, o: float, read: float) -> Prices:
    return Prices(input=i, output=o, cache_read=read, cache_write=i)


def _anthropic(i: float, o: float) -> Prices:  # cache reads 0.1×, 5-minute cache writes 1.25×
    return Prices(input=i, output=o, cache_read=round(i * 0.1, 4), cache_write=round(i * 1.25, 4))


PRICES: dict[str, Prices] = {
    "gpt-4o": _openai(2.50, 10.00, 1.25),
    "gpt-4o-mini": _openai(0.15, 0.60, 0.075),
    "gpt-4.1": _openai(2.00, 8.00, 0.50),
    "gpt-4.1-mini": _openai(0.40, 1.60, 0.10),
    "gpt-5": _openai(1.25, 10.00, 0.125),
    "gpt-5-mini": _openai(0.25, 2.00, 0.025),
    "o3": _openai(2.00, 8.00, 0.50),
    "o4-mini": _openai(1.10, 4.40, 0.275),
    "claude-opus-4-1": _anthropic(15.00, 75.00),
    "claude-sonnet-4-5": _anthropic(3.00, 15.00),
    "claude-haiku-4-5": _anthropic(1.00, 5.00),
    "claude-3-5-haiku": _anthropic(0.80, 4.00),
}


def _m(name: str, provider: str, ctx: int, out: int, enc: str, native: bool, cal: float = 1.0, *aliases: str):
    return ModelSpec(
        name=name,
        provider=provider,
        context_length=ctx,
        max_output=out,
        encoding=enc,
        native=native,
        calibration=cal,
        aliases=tuple(aliases),
        prices=PRICES.get(name),
    )


BUILTIN_MODELS: tuple[ModelSpec, ...] = (
    # OpenAI
    _m("gpt-4o", "openai", 128_000, 16_384, "o200k_base", True, 1.0, "gpt-4o-2024-11-20", "chatgpt-4o-latest"),
    _m("gpt-4o-mini", "openai", 128_000, 16_384, "o200k_base", True),
    _m("gpt-4.1", "openai", 1_047_576, 32_768, "o200k_base", True),
    _m("gpt-4.1-mini", "openai", 1_047_576, 32_768, "o200k_base", True),
    _m("gpt-5", "openai", 400_000, 128_000, "o200k_base", True),
    _m("gpt-5-mini", "openai", 400_000, 128_000, "o200k_base", True),
    _m("o3", "openai", 200_000, 100_000, "o200k_base", True),
    _m("o4-mini", "openai", 200_000, 100_000, "o200k_base", True),
    _m("gpt-4-turbo", "openai", 128_000, 4_096, "cl100k_base", True),
    _m("gpt-3.5-turbo", "openai", 16_385, 4_096, "cl100k_base", True),
    # Anthropic
    _m("claude-opus-4-1", "anthropic", 200_000, 32_000, "cl100k_base", False, 1.40, "claude-opus-4"),
    _m("claude-sonnet-4-5", "anthropic", 200_000, 64_000, "cl100k_base", False, 1.40, "claude-sonnet-4"),
    _m("claude-haiku-4-5", "anthropic", 200_000, 64_000, "cl100k_base", False, 1.40),
    _m("claude-3-5-haiku", "anthropic", 200_000, 8_192, "cl100k_base", False, 1.40),
    # Google
    _m("gemini-2.5-pro", "google", 1_048_576, 65_536, "cl100k_base", False, 1.20),
    _m("gemini-2.5-flash", "google", 1_048_576, 65_536, "cl100k_base", False, 1.20),
    _m("gemini-2.0-flash", "google", 1_048_576, 8_192, "cl100k_base", False, 1.20),
    # Meta
    _m("llama-3.3-70b", "meta", 131_072, 8_192, "cl100k_base", False, 1.10, "llama-3.1-70b"),
    _m("llama-3.1-8b", "meta", 131_072, 8_192, "cl100k_base", False, 1.10),
    _m("llama-4-maverick", "meta", 1_048_576, 16_384, "cl100k_base", False, 1.15),
    # Mistral
    _m("mistral-large", "mistral", 131_072, 8_192, "cl100k_base", False, 1.20),
    _m("codestral", "mistral", 256_000, 8_192, "cl100k_base", False, 1.20),
    _m("devstral", "mistral", 131_072, 8_192, "cl100k_base", False, 1.20),
    # Qwen
    _m("qwen2.5-coder-32b", "qwen", 131_072, 8_192, "cl100k_base", False, 1.15),
    _m("qwen3-coder", "qwen", 262_144, 65_536, "cl100k_base", False, 1.15),
    # DeepSeek
    _m("deepseek-v3", "deepseek", 131_072, 8_192, "cl100k_base", False, 1.15, "deepseek-chat"),
    _m("deepseek-r1", "deepseek", 131_072, 32_768, "cl100k_base", False, 1.15, "deepseek-reasoner"),
)

DEFAULT_MODEL = "gpt-4o"


class ModelRegistry:
    """Built-in models plus user overrides; lookups by name or alias, case-insensitive, and by the
    longest known prefix (``claude-sonnet-4-5-20250929`` finds ``claude-sonnet-4-5``)."""

    def __init__(self, overrides: list[ModelSpec] | None = None) -> None:
        self._by_name: dict[str, ModelSpec] = {}
        for spec in (*BUILTIN_MODELS, *(overrides or [])):
            for key in (spec.name, *spec.aliases):
                self._by_name[key.lower()] = spec

    def names(self) -> list[str]:
        return sorted({s.name for s in self._by_name.values()})

    def lookup(self, name: str) -> ModelSpec | None:
        key = name.strip().lower()
        if "/" in key:  # "openai/gpt-4o", "anthropic/claude-sonnet-4-5"
            key = key.rsplit("/", 1)[1]
        if key in self._by_name:
            return self._by_name[key]
        prefixes = [k for k in self._by_name if key.startswith(k + "-") or key.startswith(k + "@")]
        if prefixes:
            return self._by_name[max(prefixes, key=len)]
        return None
