"""User configuration: `ctx.toml` or `[tool.ctx-lsp]` in pyproject.toml, then editor settings.

Validated by msgspec (frozen Structs: settings in snake_case, or camelCase as editors send them).
An invalid value never stops the tool: it is named in a message and its default is used
instead: bad input gets a clear message, and the server keeps serving.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec
from msgspec import Meta, field

from ctx_lsp.workspace.files import MAX_SMALL_FILE_BYTES, PathRefused, read_workspace_file

Positive = Annotated[int, Meta(gt=0)]
Count = Annotated[int, Meta(ge=0)]
Price = Annotated[float, Meta(ge=0)]  # per million tokens
Share = Annotated[float, Meta(ge=0, le=1)]
Mode = Literal["off", "light", "heavy"]


class _Settings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    pass


class SharesConfig(_Settings):
    system: Share = 0.15
    conversation: Share = 0.55
    rag: Share = 0.30

    def __post_init__(self) -> None:
        total = self.system + self.conversation + self.rag
        if not 0.99 <= total <= 1.01:
            raise ValueError(f"section shares must add up to 1.0, got {total:.2f}")


class ModelOverride(_Settings):
    name: Annotated[str, Meta(min_length=1)]
    context_length: Positive
    max_output: Positive
    encoding: Literal["cl100k_base", "o200k_base"] = "cl100k_base"
    native: bool = False
    calibration: Annotated[float, Meta(ge=0.5, le=3.0)] = 1.0
    provider: str = "custom"
    aliases: tuple[str, ...] = ()
    # prices per million tokens (savings are counted in money only for a model with prices)
    input_price: Price | None = None
    output_price: Price | None = None
    cache_read_price: Price | None = None
    cache_write_price: Price | None = None


class LlmEndpoint(_Settings):
    """An OpenAI-compatible chat-completions endpoint (summaries, capsules)."""

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_seconds: Annotated[float, Meta(gt=0)] = 30.0
    retries: Annotated[int, Meta(ge=0, le=10)] = 2
    context_length: Annotated[int, Meta(gt=512)] = 16_000


class GatewayConfig(_Settings):
    """The gateway (docs/gateway.md). With ``listen`` set, the editor's ``ctx-lsp serve`` runs it too."""

    listen: str | None = None  # HOST:PORT
    openai_upstream: str = "https://api.openai.com/v1"  # as OPENAI_BASE_URL takes it
    anthropic_upstream: str = "https://api.anthropic.com"  # as ANTHROPIC_BASE_URL takes it
    mode: Mode | None = None  # None: the workspace's mode
    token: str | None = None  # required to listen on anything but loopback (clients send X-Ctx-Token)
    # tokens of retrieved context a request carries at most (sent once per user turn, then cached)
    context_budget: Count = 8_000
    # what pays for that context: "savings" — only what the gateway has saved this conversation
    # (cache-weighted against sending direct), so a conversation that fits costs what it would
    # direct; "always" — the context budget whatever it costs. None: "savings" in light mode,
    # "always" in heavy mode (more context, knowingly paid for)
    context_cost: Literal["savings", "always"] | None = None
    # review before send (the editor's server only): each request waits for Send, Cancel or a
    # re-plan in the editor; after the timeout it is sent as planned
    review: bool = False
    review_timeout: Annotated[float, Meta(gt=0, le=3600)] = 120.0
    # a tool output over this many tokens, of a kind ctx_lsp recognises, is shortened once (0: never)
    shrink_tokens: Count = 2_000
    shrink_off: tuple[str, ...] = ()  # tool names whose outputs are never shortened


class CtxConfig(_Settings):
    model: str = "gpt-4o"
    mode: Mode = "light"
    default_context_length: Positive = 128_000
    max_completion_tokens: Positive | None = None
    default_max_completion_tokens: Positive = 4_096
    safety_buffer: Count = 2_048
    shares: SharesConfig = field(default_factory=SharesConfig)
    models: tuple[ModelOverride, ...] = ()
    allow_encoding_download: bool = False
    store_dir: str = ".ctx"
    system_prompt: str | None = None
    retrieval_limit: Annotated[int, Meta(gt=0, le=5_000)] = 200
    summarizer: Literal["extractive", "llm"] = "extractive"
    compaction_threshold: Annotated[float, Meta(ge=0.1, le=1.0)] = 0.85  # of the conversation budget
    include_stale_capsules: bool = False  # include them flagged instead of excluding them
    llm: LlmEndpoint = field(default_factory=LlmEndpoint)
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    # Secrets (keys, tokens, private keys, passwords) in workspace text are masked before
    # anything derived from it reaches a prompt (ctx_lsp/workspace/secrets.py).
    mask_secrets: bool = True
    secret_allowlist: tuple[str, ...] = ()  # regular expressions: a detected value matching one stays
    secret_detectors_off: tuple[str, ...] = ()  # detect-secrets plugin names not to use

    def __post_init__(self) -> None:
        for pattern in self.secret_allowlist:
            try:
                re.compile(pattern)
            except re.error as err:
                raise _Invalid("secret_allowlist", f"{pattern!r} is not a regular expression: {err}") from None
        if self.secret_detectors_off:
            from ctx_lsp.workspace.secrets import detector_names

            known = detector_names()
            unknown = [v for v in self.secret_detectors_off if v not in known]
            if unknown:
                problem = f"unknown detector {', '.join(unknown)}; the detectors are {', '.join(known)}"
                raise _Invalid("secret_detectors_off", problem)


class _Invalid(ValueError):
    """A setting the whole configuration's check found wrong (msgspec places it at the top)."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{problem} - at `$.{key}`")


_AT = re.compile(r"^(.*?)(?: - at `\$(.*)`)?$", re.DOTALL)
_UNKNOWN = re.compile(r"^Object contains unknown field `(.*)`$")


def _problem(err: msgspec.ValidationError) -> tuple[str, str]:
    """``(where, problem)`` of msgspec's message, e.g. ``("shares.rag", "Expected `float` <= 1.0")``;
    an unknown setting is where it was found."""
    text = str(err)
    if text.endswith(" - at `$`"):  # raised by a whole Struct's own check, naming its setting
        text = text[: -len(" - at `$`")]
    problem, where = _AT.match(text).groups()  # type: ignore[union-attr]
    where = (where or "").lstrip(".")
    unknown = _UNKNOWN.match(problem)
    if unknown:
        return ".".join(p for p in (where, unknown.group(1)) if p), "unknown setting"
    if problem.startswith("Invalid enum value"):  # msgspec does not say which values are
        choices = _choices(where)
        if choices:
            problem += f"; expected one of {', '.join(repr(c) for c in choices)}"
    return where or "(top level)", problem


def _choices(where: str) -> tuple[Any, ...]:
    """The values the setting at ``where`` (``gateway.mode``, ``models[0].encoding``) may take."""
    kind: Any = CtxConfig
    for name in re.sub(r"\[\d+\]", "", where).split("."):
        if not (isinstance(kind, type) and issubclass(kind, msgspec.Struct)):
            return ()
        kind = _inner(next((f.type for f in msgspec.structs.fields(kind) if f.name == name), None))
    return get_args(kind) if get_origin(kind) is Literal else ()


def _inner(kind: Any) -> Any:
    """A type without what wraps it: ``Annotated``, ``| None``, ``tuple[X, ...]``."""
    while get_origin(kind) in (Annotated, UnionType, Union, tuple):
        kind = next(a for a in get_args(kind) if a is not type(None) and a is not Ellipsis)
    return kind


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key).replace("-", "_")


def _snake_keys(value: Any) -> Any:
    """Settings' names in snake_case, however deep (editors send camelCase)."""
    if isinstance(value, dict):
        return {_snake(str(k)): _snake_keys(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_snake_keys(v) for v in value]
    return value


def validate(raw: dict[str, Any], source: str, base: CtxConfig | None = None) -> tuple[CtxConfig, list[str]]:
    """Validate ``raw`` over ``base``; each invalid top-level key keeps its current value and is
    reported as ``"<source>: <key>: <problem> (using the default)"``."""
    base = base or CtxConfig()
    merged = msgspec.to_builtins(base)
    for key, value in _snake_keys(raw).items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):  # a table: key by key, over the base's
            value = {**merged[key], **value}
        merged[key] = value
    messages: list[str] = []
    for _ in range(len(merged) + 1):  # one bad setting at a time: msgspec stops at the first
        try:
            return msgspec.convert(merged, CtxConfig, strict=False), messages
        except msgspec.ValidationError as err:
            where, problem = _problem(err)
            messages.append(f"{source}: {where}: {problem} (using the default)")
            key = where.split(".", 1)[0].split("[", 1)[0]
            if key in CtxConfig.__struct_fields__:
                merged[key] = msgspec.to_builtins(getattr(base, key))
            elif key in merged:
                del merged[key]
            else:
                break
    return base, messages


# Settings that send data off this machine or open a port: a workspace's own file sets them only
# when the user trusts it (ctx_lsp/trust.py); (table, key, the value that needs trust, or None: any)
NEEDS_TRUST: tuple[tuple[str | None, str, Any], ...] = (
    (None, "summarizer", "llm"),
    (None, "llm", None),
    (None, "allow_encoding_download", True),
    ("gateway", "listen", None),
    ("gateway", "token", None),
)


def untrusted(data: dict[str, Any], name: str) -> tuple[dict[str, Any], list[str]]:
    """``data`` without what a workspace's file may not decide on its own, and a message naming
    what was left out."""
    data = _snake_keys(data)
    dropped = []
    for table, key, value in NEEDS_TRUST:
        where = data.get(table) if table else data
        if isinstance(where, dict) and key in where and (value is None or where[key] == value):
            if table:
                data[table] = {k: v for k, v in where.items() if k != key}
            else:
                data = {k: v for k, v in data.items() if k != key}
            dropped.append(f"{table}.{key}" if table else key)
    if not dropped:
        return data, []
    return data, [
        f"{name}: {', '.join(dropped)} ignored: a workspace's own settings cannot send data off this "
        "machine or open a port; set them in your editor's settings or on the command line, or "
        f"trust this folder with `ctx-lsp trust` (README: What a workspace cannot do)"
    ]


def load_workspace_config(root: Path) -> tuple[CtxConfig, list[str]]:
    """`ctx.toml` in the workspace root wins over `[tool.ctx-lsp]` in pyproject.toml; settings that
    need trust (``NEEDS_TRUST``) only when the user trusts the folder with the file as it is."""
    from ctx_lsp.trust import is_trusted

    for name, pick in (("ctx.toml", lambda d: d), ("pyproject.toml", lambda d: d.get("tool", {}).get("ctx-lsp"))):
        path = root / name
        if not os.path.lexists(path):
            continue
        try:  # a cloned repository's settings: never through a link out of it, never unbounded
            raw = read_workspace_file(root, name, MAX_SMALL_FILE_BYTES)
            data = pick(tomllib.loads(raw.decode("utf-8")))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError, PathRefused) as err:
            return CtxConfig(), [f"{name}: cannot read it ({err}); using defaults"]
        if data is None:
            continue
        if not isinstance(data, dict):
            return CtxConfig(), [f"{name}: expected a table of settings; using defaults"]
        ignored: list[str] = []
        if not is_trusted(root, raw):
            data, ignored = untrusted(data, name)
        config, messages = validate(data, name)
        return config, ignored + messages
    return CtxConfig(), []
