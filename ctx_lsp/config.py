"""User configuration: `ctx.toml` or `[tool.ctx-lsp]` in pyproject.toml, then editor settings.

Validated by pydantic. An invalid value never stops the tool: it is named in a message and its
default is used instead: bad input gets a clear message, and the server keeps serving.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from ctx_lsp.workspace.files import MAX_SMALL_FILE_BYTES, PathRefused, read_workspace_file


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)


class SharesConfig(_Model):
    system: float = Field(0.15, ge=0, le=1)
    conversation: float = Field(0.55, ge=0, le=1)
    rag: float = Field(0.30, ge=0, le=1)

    @model_validator(mode="after")
    def _sum_to_one(self) -> SharesConfig:
        total = self.system + self.conversation + self.rag
        if not 0.99 <= total <= 1.01:
            raise ValueError(f"section shares must add up to 1.0, got {total:.2f}")
        return self


class ModelOverride(_Model):
    name: str = Field(min_length=1)
    context_length: int = Field(gt=0)
    max_output: int = Field(gt=0)
    encoding: Literal["cl100k_base", "o200k_base"] = "cl100k_base"
    native: bool = False
    calibration: float = Field(1.0, ge=0.5, le=3.0)
    provider: str = "custom"
    aliases: tuple[str, ...] = ()
    # prices per million tokens (savings are counted in money only for a model with prices)
    input_price: float | None = Field(None, ge=0)
    output_price: float | None = Field(None, ge=0)
    cache_read_price: float | None = Field(None, ge=0)
    cache_write_price: float | None = Field(None, ge=0)


class LlmEndpoint(_Model):
    """An OpenAI-compatible chat-completions endpoint (summaries, capsules)."""

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_seconds: float = Field(30.0, gt=0)
    retries: int = Field(2, ge=0, le=10)
    context_length: int = Field(16_000, gt=512)


class GatewayConfig(_Model):
    """The gateway (docs/gateway.md). With ``listen`` set, the editor's ``ctx-lsp serve`` runs it too."""

    listen: str | None = None  # HOST:PORT
    openai_upstream: str = "https://api.openai.com/v1"  # as OPENAI_BASE_URL takes it
    anthropic_upstream: str = "https://api.anthropic.com"  # as ANTHROPIC_BASE_URL takes it
    mode: Literal["off", "light", "heavy"] | None = None  # None: the workspace's mode
    token: str | None = None  # required to listen on anything but loopback (clients send X-Ctx-Token)
    # tokens of retrieved context a request carries at most (sent once per user turn, then cached)
    context_budget: int = Field(8_000, ge=0)
    # what pays for that context: "savings" — only what the gateway has saved this conversation
    # (cache-weighted against sending direct), so a conversation that fits costs what it would
    # direct; "always" — the context budget whatever it costs. None: "savings" in light mode,
    # "always" in heavy mode (more context, knowingly paid for)
    context_cost: Literal["savings", "always"] | None = None
    # review before send (the editor's server only): each request waits for Send, Cancel or a
    # re-plan in the editor; after the timeout it is sent as planned
    review: bool = False
    review_timeout: float = Field(120.0, gt=0, le=3600)
    # a tool output over this many tokens, of a kind ctx_lsp recognises, is shortened once (0: never)
    shrink_tokens: int = Field(2_000, ge=0)
    shrink_off: tuple[str, ...] = ()  # tool names whose outputs are never shortened


class CtxConfig(_Model):
    model: str = "gpt-4o"
    mode: Literal["off", "light", "heavy"] = "light"
    default_context_length: int = Field(128_000, gt=0)
    max_completion_tokens: int | None = Field(None, gt=0)
    default_max_completion_tokens: int = Field(4_096, gt=0)
    safety_buffer: int = Field(2_048, ge=0)
    shares: SharesConfig = SharesConfig()
    models: tuple[ModelOverride, ...] = ()
    allow_encoding_download: bool = False
    store_dir: str = ".ctx"
    system_prompt: str | None = None
    retrieval_limit: int = Field(200, gt=0, le=5_000)
    summarizer: Literal["extractive", "llm"] = "extractive"
    compaction_threshold: float = Field(0.85, ge=0.1, le=1.0)  # of the conversation budget
    include_stale_capsules: bool = False  # include them flagged instead of excluding them
    llm: LlmEndpoint = LlmEndpoint()
    gateway: GatewayConfig = GatewayConfig()
    # Secrets (keys, tokens, private keys, passwords) in workspace text are masked before
    # anything derived from it reaches a prompt (ctx_lsp/workspace/secrets.py).
    mask_secrets: bool = True
    secret_allowlist: tuple[str, ...] = ()  # regular expressions: a detected value matching one stays
    secret_detectors_off: tuple[str, ...] = ()  # detect-secrets plugin names not to use

    @field_validator("secret_allowlist")
    @classmethod
    def _patterns(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as err:
                raise ValueError(f"{pattern!r} is not a regular expression: {err}") from None
        return value

    @field_validator("secret_detectors_off")
    @classmethod
    def _detectors(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if value:
            from ctx_lsp.workspace.secrets import detector_names

            known = detector_names()
            unknown = [v for v in value if v not in known]
            if unknown:
                raise ValueError(f"unknown detector {', '.join(unknown)}; the detectors are {', '.join(known)}")
        return value


def _describe(err: ValidationError) -> list[str]:
    out = []
    for e in err.errors(include_url=False):
        where = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = "unknown setting" if e["type"] == "extra_forbidden" else e["msg"]
        out.append(f"{where}: {msg}")
    return out


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key).replace("-", "_")


def validate(raw: dict[str, Any], source: str, base: CtxConfig | None = None) -> tuple[CtxConfig, list[str]]:
    """Validate ``raw`` over ``base``; each invalid top-level key keeps its current value and is
    reported as ``"<source>: <key>: <problem> (using the default)"``."""
    base = base or CtxConfig()
    merged = base.model_dump()
    for key, value in raw.items():
        key = _snake(key)
        if isinstance(value, dict) and isinstance(merged.get(key), dict):  # a table: key by key, over the base's
            value = {**merged[key], **{_snake(k): v for k, v in value.items()}}
        merged[key] = value
    messages: list[str] = []
    for _ in range(len(raw) + 1):
        try:
            return CtxConfig.model_validate(merged), messages
        except ValidationError as err:
            messages.extend(f"{source}: {line} (using the default)" for line in _describe(err))
            bad = {_snake(str(e["loc"][0])) for e in err.errors() if e["loc"]}
            if not bad:
                break
            for key in bad:
                if key in CtxConfig.model_fields:
                    merged[key] = getattr(base, key)
                else:
                    merged.pop(key, None)
    return base, messages


def load_workspace_config(root: Path) -> tuple[CtxConfig, list[str]]:
    """`ctx.toml` in the workspace root wins over `[tool.ctx-lsp]` in pyproject.toml."""
    for name, pick in (("ctx.toml", lambda d: d), ("pyproject.toml", lambda d: d.get("tool", {}).get("ctx-lsp"))):
        path = root / name
        if not os.path.lexists(path):
            continue
        try:  # a cloned repository's settings: never through a link out of it, never unbounded
            data = pick(tomllib.loads(read_workspace_file(root, name, MAX_SMALL_FILE_BYTES).decode("utf-8")))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError, PathRefused) as err:
            return CtxConfig(), [f"{name}: cannot read it ({err}); using defaults"]
        if data is None:
            continue
        if not isinstance(data, dict):
            return CtxConfig(), [f"{name}: expected a table of settings; using defaults"]
        return validate(data, name)
    return CtxConfig(), []
