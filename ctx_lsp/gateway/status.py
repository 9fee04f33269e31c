"""What the gateway has done: one record per request (a log line, ``ctx/gatewayRequest`` in the
editor) and the counts behind ``GET /ctx/status``. Never a header, a key or a body."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

import msgspec

from ctx_lsp.core.items import SYSTEM_PROMPT
from ctx_lsp.core.meter import format_tokens

if TYPE_CHECKING:
    from ctx_lsp.gateway.options import GatewayOptions
    from ctx_lsp.sessions.values import Usage


class GatewayRecord(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """One request through the gateway, as the log, the status page and the editor see it."""

    time: float
    session: str | None = None
    model: str | None = None
    plan_id: str | None = None
    estimated_input: int | None = None  # the plan's count of what was sent
    client_input: int | None = None  # the same count of what the client's request held
    client_messages: int = 0
    sent_messages: int = 0  # conversation items forwarded (after shedding)
    dropped: int = 0  # conversation items the plan left out (archived, outside the window)
    masked: int = 0
    injected: int = 0  # context items added (pins, scaffold, retrieval, summary)
    input_tokens: int | None = None  # what the provider reported
    cached_input_tokens: int | None = None
    output_tokens: int | None = None
    added_ms: float = 0.0  # time the gateway spent before forwarding
    upstream_ms: float = 0.0  # time to the upstream's first byte
    note: str | None = None  # why the client's body went as it was
    prompt_budget: int | None = None  # of the plan
    requests: int = 0  # through the gateway so far, this one included
    rebuilt: str | None = None  # why this request rebuilt the prefix the provider caches (None: it appended)
    cache_miss: str | None = None  # the provider's own reason its cache missed (Anthropic's cache diagnostics)
    sent: float | None = None  # when it went upstream: the provider's cache was read then
    cache_ttl: int | None = None  # the cache lifetime its breakpoints asked for, seconds

    def label(self) -> str:
        """For a status bar: requests, input of this request / its budget, the cached share."""
        used = self.input_tokens if self.input_tokens is not None else self.estimated_input
        parts = [f"⇄ {self.requests}"]
        if used is not None and self.prompt_budget:
            parts.append(f"{format_tokens(used)}/{format_tokens(self.prompt_budget)}")
        if self.input_tokens and self.cached_input_tokens is not None:
            parts.append(f"{round(100 * self.cached_input_tokens / self.input_tokens)}% cached")
        if self.rebuilt:  # the cache was rebuilt on purpose here: a lower share is expected, and why
            parts.append(f"prefix rebuilt: {self.rebuilt.split(':')[0].split(',')[0]}")
        return " · ".join(parts)

    def text_line(self) -> str:
        def k(n: int | None) -> str:
            return "?" if n is None else f"{n / 1000:.1f}k" if n >= 1000 else str(n)

        parts = [
            f"gateway {self.session or '-'} {self.model or '-'}",
            f"est {k(self.estimated_input)} → in {k(self.input_tokens)} (cached {k(self.cached_input_tokens)})",
            f"out {k(self.output_tokens)}",
            f"msgs {self.sent_messages}/{self.client_messages}",
            f"dropped {self.dropped} masked {self.masked} +ctx {self.injected}",
            f"+{self.added_ms:.1f} ms",
        ]
        if self.plan_id:
            parts.append(self.plan_id)
        if self.rebuilt:
            parts.append(f"prefix rebuilt: {self.rebuilt}")
        if self.cache_miss:
            parts.append(f"provider cache miss: {self.cache_miss}")
        if self.note:
            parts.append(f"({self.note})")
        return " · ".join(parts)

    def json_line(self) -> str:
        return msgspec.json.encode(self).decode()


class Status:
    def __init__(self, options: GatewayOptions) -> None:
        self.options = options
        self.url = options.url
        self.workspace: str | None = None  # the root it plans over (wrap joins a gateway of its workspace)
        self.started = time.time()
        self.counts: Counter[str] = Counter()
        self.last: GatewayRecord | None = None

    def count(self, what: str) -> None:
        self.counts[what] += 1

    def record(self, planned: Any, usage: Usage | None, added_ms: float, upstream_ms: float) -> GatewayRecord:
        plan, parsed = planned.plan, planned.parsed
        rec = GatewayRecord(
            time=time.time(),
            session=planned.session,
            model=parsed.model if parsed else None,
            client_messages=len(parsed.items) if parsed else 0,
            added_ms=round(added_ms, 2),
            upstream_ms=round(upstream_ms, 2),
            note=planned.note,
            sent=planned.sent,
            cache_ttl=parsed.cache_ttl if parsed else None,
        )
        if plan is not None:
            p = plan.outcome.result.plan
            conversation = set(plan.ids)
            shown = plan.placement.shown
            rec.plan_id = p.plan_id
            rec.estimated_input = p.totals.tokens
            rec.rebuilt = plan.rebuilt
            rec.prompt_budget = p.prompt_budget
            rec.client_input = plan.client_tokens
            self.counts["client_tokens"] += plan.client_tokens
            self.counts["forwarded_tokens"] += p.totals.tokens
            rec.sent_messages = sum(1 for i in conversation if i in shown)
            rec.dropped = len(conversation) - rec.sent_messages
            rec.masked = sum(1 for c in plan.outcome.result.chosen if c.masked)
            chosen = plan.outcome.result.chosen
            rec.injected = sum(1 for c in chosen if not c.item.messages and c.item.kind != SYSTEM_PROMPT)
        else:
            rec.sent_messages = rec.client_messages
        if usage is not None:
            rec.input_tokens, rec.cached_input_tokens = usage.input_tokens, usage.cached_input_tokens
            rec.output_tokens = usage.output_tokens
            rec.cache_miss = usage.cache_miss
            self.counts["input_tokens"] += usage.input_tokens
            self.counts["cached_tokens"] += usage.cached_input_tokens
        self.counts["requests"] += 1
        self.counts["planned" if plan is not None else "as_sent"] += 1
        rec.requests = self.counts["requests"]
        self.last = rec
        return rec

    def snapshot(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "workspace": self.workspace,
            "upstreams": {"openai": self.options.openai_upstream, "anthropic": self.options.anthropic_upstream},
            "mode": self.options.mode,
            "since": self.started,
            "counts": dict(self.counts),
            "last": json.loads(self.last.json_line()) if self.last else None,
        }
