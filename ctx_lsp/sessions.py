"""The sessions engine behind the language server: an Engine (workspace + planning) plus the
memory store — pins, conversation trees, plans and usage, compaction, capsules, reflection.

Handlers in ``server/`` call these methods on one worker thread; nothing here knows about LSP.
"""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ctx_lsp.core.conversation import (
    Sized,
    conversation_window,
    group_turns,
    mask_limit,
    parse_messages,
    sized_cost,
    with_query,
)
from ctx_lsp.core.items import (
    CAPSULE,
    BudgetSpec,
    Item,
    Message,
    Mode,
    PinKind,
    PinnedItem,
    PinPolicy,
    PinSpec,
)
from ctx_lsp.core.meter import format_tokens
from ctx_lsp.core.planner import FRAMING_TOKENS, PlanResult, plan
from ctx_lsp.core.tokens import TokenCounter, counter_for, scaled, utf8_size
from ctx_lsp.engine import (
    Engine,
    Focus,
    PlanOutcome,
    PlanRequest,
    ResolvedModel,
    UserError,
)
from ctx_lsp.memory import reflection
from ctx_lsp.memory.capsules import code_hash, make_capsule
from ctx_lsp.memory.compaction import Compaction, Digest, extract_digest, split_for_compaction, summarise
from ctx_lsp.memory.llm import ChatClient
from ctx_lsp.memory.store import (
    BOUND_ENCODING,
    MemoryStore,
    MemoryUnavailable,
    MessageMeta,
    PinRecord,
    SessionRecord,
    StoredMessage,
    StoreError,
    UsageStats,
)
from ctx_lsp.workspace import resolve, retrieval
from ctx_lsp.workspace.files import PathRefused, read_workspace_text
from ctx_lsp.workspace.secrets import masked_detail

SESSION_PLAN_CACHE = 16
CALIBRATION_MIN_REPORTS = 3  # fewer measurements than this keep the registry's factor
COMPACTION_KEEP_SHARE = 0.5  # after a compaction, the recent turns kept fill at most half the budget
CENTRAL_CAPSULES = 5  # capsules made for the most central modules when none are asked for
LEDGER_TURNS = 5
# The session of every request that names none, whichever face it came through (an editor, a code
# lens, the gateway): one per workspace, since the store is per workspace, so it survives restarts.
DEFAULT_SESSION = "default"
COUNT_BATCH = 32  # messages read at once when counting what an earlier version stored uncounted
_WORD_AT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class PinIntent:
    """A pin to make (or, in a what-if plan, to imagine)."""

    symbol: str | None = None
    path: str | None = None
    line: int | None = None
    character: int | None = None
    text: str | None = None  # the buffer's text when it differs from disk
    kind: PinKind = "sticky"
    ttl: int | None = None
    policy: PinPolicy = "automatic"
    priority: int = 0
    lease_scope: str = "turn"
    created_by: str = "user"


@dataclass(slots=True)
class SessionPlanRequest:
    session: str
    query: str
    model: str | None = None
    mode: Mode | None = None
    context_length: int | None = None
    max_completion_tokens: int | None = None
    safety_buffer: int | None = None
    rag_budget: int | None = None
    focus: Focus | None = None
    open_files: list[str] = field(default_factory=list)
    dry_run: bool = False
    extra_pins: list[PinIntent] = field(default_factory=list)
    drop_items: list[str] = field(default_factory=list)


class NotFound(UserError):
    """Something named in a request does not exist (session, plan, pin, symbol, message)."""


class SessionEngine:
    """The engine behind the language server: an Engine plus the memory store."""

    def __init__(self, engine: Engine, store: MemoryStore | None = None) -> None:
        self.engine = engine
        self.memory_error: MemoryUnavailable | None = None
        if store is None:
            try:
                store = MemoryStore(engine.root / engine.config.store_dir / "memory.sqlite3")
            except MemoryUnavailable as err:  # the index and planning keep working; the file is left as it is
                self.memory_error = err
                store = MemoryStore(None)
        self.store = store
        self._outcomes: OrderedDict[str, PlanOutcome] = OrderedDict()
        self._events: list[tuple[str, dict[str, Any]]] = []

    def close(self) -> None:
        self.store.close()
        self.engine.close()

    def startup_messages(self) -> list[str]:
        """What the user should know after start-up: settings that were ignored, a cache that
        was rebuilt, a memory store that cannot be read."""
        out = list(self.engine.config_messages)
        if self.memory_error is not None:
            out.append(str(self.memory_error))
        return out

    def require_memory(self) -> None:
        """Before anything the user makes (a pin, a message, a mode…) is written, and for work
        that reads the store: with the store unreadable, what is made would be lost at the next
        start — so say so instead of pretending."""
        if self.memory_error is not None:
            raise self.memory_error

    # ---- sessions --------------------------------------------------------------------------

    def open_session(self, session: str) -> SessionRecord:
        return self.store.ensure_session(session)

    def set_mode(self, session: str, mode: Mode) -> Mode:
        self.require_memory()
        self.open_session(session)
        self.store.set_mode(session, mode)
        return mode

    # ---- symbols and pins ------------------------------------------------------------------

    def resolve(self, intent: PinIntent):
        """The indexed symbol a pin intent names: by qualified name, or at a position (the
        name under the cursor if it resolves, else the innermost enclosing definition)."""
        index = self.engine.index
        if intent.symbol:
            sym = index.resolve_name(intent.symbol, intent.path)
            if sym is None:
                hints = [h.symbol.qualname for h in index.search(intent.symbol, limit=3)]
                hint = f" (did you mean {', '.join(hints)}?)" if hints else ""
                raise NotFound(f"no symbol {intent.symbol!r} in the workspace index{hint}")
            return sym
        if intent.path is None or intent.line is None:
            raise UserError("a pin needs a symbol name, or a document and a position")
        if intent.text is not None:
            index.update_file(intent.path, intent.text.encode("utf-8"))
        word = self._word_at(intent)
        enclosing = index.symbol_at(intent.path, intent.line)
        if word and not (enclosing is not None and enclosing.name == word and enclosing.start_line <= intent.line):
            sym = index.resolve_name(word, intent.path)
            root, char = self.engine.root, intent.character or 0
            if sym is None or resolve.is_attribute(root, intent.path, intent.text, intent.line, char):
                # jedi (time-limited) follows imports and infers ``obj.method``; the name lookup
                # stays the answer when jedi has none
                found = resolve.resolve_at(root, intent.path, intent.text, intent.line, char)
                sym = (index.resolve_name(found, intent.path) if found else None) or sym
            if sym is not None:
                return sym
        if enclosing is None or enclosing.kind == "module":
            where = f"{intent.path}:{intent.line + 1}:{(intent.character or 0) + 1}"
            raise NotFound(
                f"no symbol at {where}: put the cursor on a function, class or method (or its name), "
                "or pin by qualified name"
            )
        return enclosing

    def _word_at(self, intent: PinIntent) -> str | None:
        if intent.character is None or intent.path is None or intent.line is None:
            return None
        text = intent.text
        if text is None:
            try:
                text = read_workspace_text(self.engine.root, intent.path)
            except (OSError, PathRefused):
                return None
        lines = text.splitlines()
        if intent.line >= len(lines):
            return None
        line = lines[intent.line]
        for m in _WORD_AT.finditer(line):
            if m.start() <= intent.character <= m.end():
                return m.group(0)
        return None

    def _pin_item(self, sym, calibration: float) -> Item:
        return retrieval.body_item(sym, calibration, section="system")

    def pin(self, session: str, intent: PinIntent) -> PinRecord:
        self.require_memory()
        record = self.open_session(session)
        sym = self.resolve(intent)
        if intent.created_by == "user":  # the user took up a suggestion (a no-op when there was none)
            self.store.set_suggestion_status(session, sym.qualname, "accepted")
        if intent.ttl is not None and intent.ttl < 0:
            raise UserError(f"ttl must be 0 or more turns, got {intent.ttl}")
        ttl = intent.ttl if intent.kind != "sticky" or intent.ttl is not None else None
        pin = PinRecord(
            id=f"pin:{sym.qualname}",
            session=session,
            branch=record.branch,
            kind=intent.kind,
            policy=intent.policy,
            ttl=ttl,
            ttl_remaining=ttl,
            lease_scope=intent.lease_scope,
            priority=intent.priority,
            created_by=intent.created_by,
            symbol=sym.qualname,
            path=sym.path,
            start_line=sym.start_line,
            end_line=sym.end_line,
            title=f"{sym.kind} {sym.qualname}",
            status="active",
            created_turn=record.turn,
            seq=0,
        )
        return self.store.add_pin(pin)

    def unpin(self, session: str, pin_id: str) -> PinRecord:
        self.require_memory()
        record = self.open_session(session)
        try:
            return self.store.remove_pin(session, record.branch, pin_id)
        except StoreError as err:
            raise NotFound(str(err)) from None

    def pins(self, session: str) -> list[PinRecord]:
        record = self.open_session(session)
        return self.store.pins(session, record.branch)

    def pin_tokens(self, pin: PinRecord) -> int | None:
        sym = self.engine.index.get(pin.symbol) if pin.symbol else None
        return None if sym is None else sym.body_tokens + retrieval.HEADER_TOKENS

    def _pinned_items(self, pins: list[PinRecord], calibration: float, notes: list[str]) -> list[PinnedItem]:
        out = []
        for p in pins:
            sym = self.engine.index.get(p.symbol) if p.symbol else None
            if sym is None:
                notes.append(f"pin {p.id}: {p.symbol} is no longer in the workspace; unpin it or pin its new name")
                continue
            spec = PinSpec(
                pin_id=p.id, kind=p.kind, policy=p.policy, ttl_remaining=p.ttl_remaining, priority=p.priority, seq=p.seq
            )
            out.append(PinnedItem(spec, self._pin_item(sym, calibration)))
        return out

    # ---- conversation ----------------------------------------------------------------------

    def append_raw(self, session: str, branch: str | None, raw: list[dict[str, Any]]) -> list[StoredMessage]:
        """Append chat messages as clients send them (OpenAI's or our camelCase spelling). A
        message without an id gets a fresh one: ids derived from content would collide when the
        same text ("ok") is sent twice."""
        messages = [
            m if r.get("id") is not None else msgspec.structs.replace(m, id=f"m-{uuid.uuid4().hex[:12]}")
            for m, r in zip(parse_messages(raw), raw, strict=True)
        ]
        return self.append(session, branch, messages)

    def append(self, session: str, branch: str | None, messages: list[Message]) -> list[StoredMessage]:
        """Store messages with their token counts, counted once here (in the session's model's
        encoding; a text over the counting limit is recorded as its UTF-8 size)."""
        self.require_memory()
        record = self.open_session(session)
        counter = self.engine.resolve_model(record.model).counter
        counts = []
        for m in messages:
            tokens, exact = counter.measure(m.content)
            counts.append((tokens, counter.encoding if exact else BOUND_ENCODING))
        try:
            return self.store.append(session, branch, messages, counts)
        except StoreError as err:
            raise NotFound(str(err)) from None

    def messages(self, session: str, branch: str | None = None) -> list[StoredMessage]:
        self.open_session(session)
        try:
            return self.store.path(session, branch)
        except StoreError as err:
            raise NotFound(str(err)) from None

    def message_count(self, session: str, branch: str | None = None) -> int:
        self.open_session(session)
        try:
            return self.store.path_length(session, branch)
        except StoreError as err:
            raise NotFound(str(err)) from None

    def _sizes(self, session: str, meta: list[MessageMeta], counter: TokenCounter) -> dict[str, Sized]:
        """The stored counts of messages, in ``counter``'s encoding. Messages never counted in it
        (stores of earlier versions, a session that changed model family) are read and counted
        now, once, and the counts stored."""
        stale = [
            m
            for m in meta
            if m.tokens is None or m.bytes is None or m.tokens_encoding not in (counter.encoding, BOUND_ENCODING)
        ]
        for start in range(0, len(stale), COUNT_BATCH):
            batch = stale[start : start + COUNT_BATCH]
            texts = self.store.contents(session, [m.id for m in batch])
            counted = []
            for m in batch:
                text = texts.get(m.id, "")
                tokens, exact = counter.measure(text)
                m.bytes, m.tokens = utf8_size(text), tokens
                m.tokens_encoding = counter.encoding if exact else BOUND_ENCODING
                counted.append((m.id, m.bytes, m.tokens, m.tokens_encoding))
            self.store.set_counts(session, counted)
        return {
            m.id: Sized(tokens=m.tokens or 0, bytes=m.bytes or 0, exact=m.tokens_encoding != BOUND_ENCODING)
            for m in meta
        }

    def _window(
        self,
        session: str,
        active: list[MessageMeta],
        sizes: dict[str, Sized],
        query: str,
        model: ResolvedModel,
        budget: BudgetSpec,
    ) -> tuple[list[Message], dict[str, Sized], int]:
        """The conversation a plan gets: only the part of the active path it can use, with the
        texts it may show whole (``conversation_window``); the rest stays unread in the store.
        Returns (messages, their sizes, how many older messages were left out)."""
        counter, cal = model.counter, model.estimator.calibration
        messages = [m.to_message() for m in active]
        if messages and messages[-1].role == "user":  # is the latest message the question itself?
            last = messages[-1]
            if sizes[last.id].bytes <= utf8_size(query) + 4096:
                text = self.store.contents(session, [last.id]).get(last.id, "")
                messages[-1] = msgspec.structs.replace(last, content=text)
        messages = with_query(messages, query)
        available = budget.prompt_budget - FRAMING_TOKENS
        window = conversation_window(messages, sizes, counter, cal, available, mask_limit(budget))
        messages = messages[window.start :]
        wanted = [m.id for m in messages if m.id in window.load and m.id in sizes and not m.content]
        texts = self.store.contents(session, wanted) if wanted else {}
        out, used = [], {}
        for m in messages:
            if m.id not in sizes:  # the query, appended as a new message
                out.append(m)
            elif m.id in window.load:
                out.append(msgspec.structs.replace(m, content=texts[m.id]) if m.id in texts else m)
                used[m.id] = sizes[m.id]
            else:
                out.append(m)
                used[m.id] = msgspec.structs.replace(sizes[m.id], loaded=False)
        return out, used, window.start

    def _history(self, session: str, archived: list[MessageMeta]) -> list[list[Message]]:
        """Archived turns for older-history retrieval: the heads of their texts, read only for
        turns not read into chunks before."""
        turns = group_turns([m.to_message() for m in archived])
        chunks = self.engine.history_chunks
        missing = [m.id for t in turns if not chunks.has(t) for m in t]
        if not missing:
            return turns
        heads = self.store.contents(session, missing, prefix=True)
        return [[msgspec.structs.replace(m, content=heads.get(m.id, "")) for m in t] for t in turns]

    def branch(self, session: str, from_message: str, name: str | None) -> dict[str, Any]:
        self.require_memory()
        self.open_session(session)
        try:
            return self.store.fork(session, from_message, name)
        except StoreError as err:
            raise NotFound(str(err)) from None

    # ---- planning ----------------------------------------------------------------------------

    def calibrated(self, model_name: str | None, session: str | None = None) -> tuple[ResolvedModel, UsageStats]:
        """The model with its estimator calibrated by measured usage, once there is some: the
        90th-percentile ratio of actual to raw-estimated input tokens (conservative: planning
        must not under-count), never below the registry's own factor for a non-native count."""
        model = self.engine.resolve_model(model_name)
        stats = self.store.usage_stats(model.spec.name, session)
        if stats.reports >= CALIBRATION_MIN_REPORTS and stats.factor is not None and not model.estimator.exact:
            factor = round(max(stats.p90 if stats.p90 is not None else stats.factor, 0.5), 3)
            est = msgspec.structs.replace(
                model.estimator, calibration=factor, spread=stats.spread, reports=stats.reports
            )
            model = ResolvedModel(spec=model.spec, known=model.known, estimator=est, counter=model.counter)
        elif stats.reports:
            est = msgspec.structs.replace(model.estimator, spread=stats.spread, reports=stats.reports)
            model = ResolvedModel(spec=model.spec, known=model.known, estimator=est, counter=model.counter)
        return model, stats

    def plan(self, req: SessionPlanRequest) -> PlanOutcome:
        record = self.open_session(req.session)
        model_name = req.model or record.model
        model, _ = self.calibrated(model_name)
        cal = model.estimator.calibration
        notes: list[str] = []
        budget = self.engine.budget(
            model,
            context_length=req.context_length,
            max_completion_tokens=req.max_completion_tokens,
            safety_buffer=req.safety_buffer,
            rag_budget=req.rag_budget,
        )
        meta = self.store.path_meta(req.session, record.branch)
        sizes = self._sizes(req.session, [m for m in meta if m.archived_by is None], model.counter)
        if not req.dry_run and not record.rolling and self._maybe_compact(record, model, req, meta, sizes):
            meta = self.store.path_meta(req.session, record.branch)
        cluster_id = self._cluster_for(record, req.query, persist=not req.dry_run)
        active = [m for m in meta if m.archived_by is None]
        conversation, sizes, skipped = self._window(req.session, active, sizes, req.query, model, budget)
        if skipped:
            notes.append(
                f"{skipped} older messages are outside any window this budget allows: not read for this plan "
                "(they stay in the session: ctx/listMessages)"
            )
        summary = self._summary_for(req.session, meta)
        history = self._history(req.session, [m for m in meta if m.archived_by is not None])
        pins = self._pinned_items(self.store.pins(req.session, record.branch), cal, notes)
        for n, intent in enumerate(req.extra_pins):
            sym = self.resolve(intent)
            ttl = intent.ttl if intent.kind != "sticky" else None
            spec = PinSpec(
                pin_id=f"what-if:{sym.qualname}",
                kind=intent.kind,
                policy=intent.policy,
                ttl_remaining=ttl,
                priority=intent.priority,
                seq=10**9 + n,
            )
            pins.append(PinnedItem(spec, self._pin_item(sym, cal)))
        drop = set(req.drop_items)
        if drop:
            pins = [p for p in pins if p.item.id not in drop and p.pin.pin_id not in drop]
        request = PlanRequest(
            query=req.query,
            model=model_name,
            context_length=req.context_length,
            max_completion_tokens=req.max_completion_tokens,
            safety_buffer=req.safety_buffer,
            rag_budget=req.rag_budget,
            mode=req.mode or record.mode,
            extra_pins=pins,
            conversation=conversation,
            sizes=sizes,
            focus=req.focus,
            open_files=req.open_files,
            summary=summary["summary"] if summary else None,
            capsules=self.capsule_items(cal),
            history=history,
            activation={k: (a.score, a.detail()) for k, a in self.activation(req.session).items()},
            cluster_id=cluster_id,
        )
        inputs, counter, timings = self.engine.build_inputs(request, model=model)
        if drop:
            inputs = msgspec.structs.replace(inputs, candidates=tuple(c for c in inputs.candidates if c.id not in drop))
        if notes:
            inputs = msgspec.structs.replace(inputs, notes=inputs.notes + tuple(notes))
        t0 = time.perf_counter()
        result = plan(inputs)
        timings["plan"] = (time.perf_counter() - t0) * 1000
        outcome = PlanOutcome(result=result, inputs=inputs, counter=counter, timings_ms=timings)
        if not req.dry_run:
            self._remember(outcome)
            self.store.save_plan(
                req.session, record.branch, record.turn, req.query, inputs, result.plan, timings, _options_of(req)
            )
            if model_name and model_name != record.model:
                self.store.set_model(req.session, model_name)
        return outcome

    # ---- reflection ----------------------------------------------------------------------------

    def activation(self, session: str) -> dict[str, reflection.Activation]:
        blob = self.store.reflection_state(session)[0]
        return msgspec.json.decode(blob, type=dict[str, reflection.Activation]) if blob else {}

    def _cluster_for(self, record: SessionRecord, query: str, *, persist: bool) -> str | None:
        """The query's cluster ("task"). Moving to another cluster ends the task-scoped leases
        made in the previous one."""
        if not query.strip():
            return None
        _, current, centroid_json, next_id = self.store.reflection_state(record.id)
        current_pair = None
        if current is not None and centroid_json:
            current_pair = (current, Counter(msgspec.json.decode(centroid_json)))
        cluster, centroid, new = reflection.assign_cluster(query, current_pair, next_id)
        if persist:
            self.store.save_cluster(
                record.id, cluster, msgspec.json.encode(dict(sorted(centroid.items()))).decode(), next_id + new
            )
            if new and current is not None:
                self.store.save_activation(
                    record.id, msgspec.json.encode(reflection.task_switch(self.activation(record.id)))
                )
                for pin_id, symbol in self.store.task_pins_outside(record.id, record.branch, cluster):
                    self.store.set_pin_ttl(record.id, record.branch, pin_id, 0, status="expired")
                    self._note_reflection(
                        record.id,
                        record.turn,
                        "demote",
                        symbol or pin_id,
                        pin_id,
                        f"task lease ended: the conversation moved from task {current} to task {cluster}",
                    )
        return cluster

    def _note_reflection(
        self, session: str, turn: int, kind: str, item: str, pin_id: str | None, reason: str, task: str | None = None
    ) -> None:
        rid = self.store.record_reflection(session, turn, kind, item, pin_id, reason, task)
        self._events.append(
            (
                "ctx/reflected",
                {
                    "session": session,
                    "id": rid,
                    "turn": turn,
                    "kind": kind,
                    "item": item,
                    "pinId": pin_id,
                    "reason": reason,
                },
            )
        )

    def _reflect(self, session: str, outcome: PlanOutcome, turn: int, expired: list[PinRecord]) -> None:
        """A turn ended: update activation from what was in the plan and what the model and the
        user named; promote, renew and demote leases; record the model's suggestions."""
        record = self.store.session(session)
        index = self.engine.index
        messages = [m.to_message() for m in self.store.turn_messages(session, turn)]

        def resolve(word: str) -> str | None:
            sym = index.resolve_name(word) if not word.endswith(".py") else None
            if sym is None and word.endswith(".py"):
                mod = next((s for s in index.symbols_in(word) if s.kind == "module"), None)
                return mod.qualname if mod else None
            return sym.qualname if sym is not None and sym.kind != "module" else None

        model_text = "\n".join(
            [m.content for m in messages if m.role == "assistant"]
            + [c.arguments for m in messages for c in m.tool_calls]
        )
        user_text = "\n".join(m.content for m in messages if m.role == "user")
        plan = outcome.result.plan
        included = {i.symbol for i in plan.included if i.symbol and i.section in ("rag", "system")}
        model_named = reflection.named_in(model_text, resolve)
        user_named = reflection.named_in(user_text, resolve)
        scores = reflection.update(self.activation(session), turn, included, model_named, user_named)
        self.store.save_activation(session, msgspec.json.encode(scores))

        pins = self.store.pins(session, record.branch)
        leased = {p.symbol for p in pins if p.kind == "leased" and p.symbol}
        sticky = {p.symbol for p in pins if p.kind == "sticky" and p.symbol}
        for p in pins:  # a lease that keeps being used is renewed
            if p.kind == "leased" and p.created_by == "auto" and p.symbol in model_named:
                self.store.set_pin_ttl(session, record.branch, p.id, reflection.LEASE_TURNS)
                self._note_reflection(
                    session,
                    turn,
                    "renew",
                    p.symbol or p.id,
                    p.id,
                    f"lease renewed for {reflection.LEASE_TURNS} turns: the model used it this turn",
                )
        for p in expired:
            if p.created_by == "auto":
                self._note_reflection(
                    session, turn, "demote", p.symbol or p.id, p.id, "lease ran out: not used for its whole lease"
                )
        retrieved = {i.symbol for i in plan.included if i.section == "rag" and i.symbol}
        _, cluster, _, _ = self.store.reflection_state(session)
        # the user undid a promotion: it stays undone for the rest of that task
        refused = {
            r["item"]
            for r in self.store.reflections(session)
            if r["kind"] == "promote" and r["undone"] and r["task"] == cluster
        }
        for symbol, reason in reflection.promotions(scores, leased | refused, sticky, retrieved, model_named):
            pin = self.pin(
                session,
                PinIntent(
                    symbol=symbol, kind="leased", ttl=reflection.LEASE_TURNS, lease_scope="task", created_by="auto"
                ),
            )
            self.store.set_pin_cluster(session, record.branch, pin.id, cluster)
            self._note_reflection(session, turn, "promote", symbol, pin.id, reason, cluster)
        for name in reflection.suggestions_in(model_text):
            target = resolve(name) or name
            if self.store.add_suggestion(session, target, turn, f"suggested by the model in turn {turn}"):
                self._note_reflection(session, turn, "suggest", target, None, f"the model suggested {name!r}")

    def suggestions(self, session: str) -> list[dict[str, Any]]:
        self.open_session(session)
        return self.store.suggestions(session)

    def reflections(self, session: str) -> list[dict[str, Any]]:
        self.open_session(session)
        return self.store.reflections(session)

    def undo_reflection(self, session: str, reflection_id: int) -> dict[str, Any]:
        """Undo a promotion (remove the automatic pin) or a demotion (restore the lease)."""
        self.require_memory()
        record = self.open_session(session)
        entry = next((r for r in self.store.reflections(session) if r["id"] == reflection_id), None)
        if entry is None:
            raise NotFound(f"no reflection {reflection_id} in session {session!r}")
        if entry["undone"]:
            raise UserError(f"reflection {reflection_id} was already undone")
        if entry["kind"] == "promote" and entry["pinId"]:
            with contextlib.suppress(StoreError):
                self.store.remove_pin(session, record.branch, entry["pinId"])
        elif entry["kind"] == "demote" and entry["pinId"]:
            self.store.set_pin_ttl(session, record.branch, entry["pinId"], reflection.LEASE_TURNS)
        elif entry["kind"] == "suggest":
            self.store.set_suggestion_status(session, entry["item"], "dismissed")
        else:
            raise UserError(f"a {entry['kind']} cannot be undone")
        self.store.mark_reflection_undone(session, reflection_id)
        return {**entry, "undone": True}

    # ---- compaction ---------------------------------------------------------------------------

    def _summary_for(self, session: str, path: list[StoredMessage]) -> dict[str, Any] | None:
        """The latest compaction whose archived messages are on this path (branches share them)."""
        on_path = {m.id for m in path}
        for c in reversed(self.store.compactions(session)):
            if c["archivedIds"] and c["archivedIds"][-1] in on_path:
                return c
        return None

    def set_memory_policy(self, session: str, rolling: bool | None, threshold: float | None) -> SessionRecord:
        self.require_memory()
        if threshold is not None and not 0.1 <= threshold <= 1.0:
            raise UserError(f"compactionThreshold must be between 0.1 and 1.0, got {threshold}")
        self.open_session(session)
        self.store.set_memory_policy(session, rolling, threshold)
        return self.store.session(session)

    def drain_events(self) -> list[tuple[str, dict[str, Any]]]:
        events, self._events = self._events, []
        return events

    def _conversation_budget(self, model: ResolvedModel, req: SessionPlanRequest | None = None) -> int:
        """The conversation section's share of the prompt budget this request would have."""
        budget = self.engine.budget(
            model,
            context_length=req.context_length if req else None,
            max_completion_tokens=req.max_completion_tokens if req else None,
            safety_buffer=req.safety_buffer if req else None,
        )
        return max(0, int(budget.prompt_budget * budget.shares.conversation))

    def _maybe_compact(
        self,
        record: SessionRecord,
        model: ResolvedModel,
        req: SessionPlanRequest,
        meta: list[MessageMeta],
        sizes: dict[str, Sized],
    ) -> bool:
        """Threshold compaction: when the active conversation reaches the threshold share of the
        conversation budget — measured from the last actual usage when there is one (scaled by
        how far off the estimate was), from stored counts otherwise — summarise older turns.
        Returns whether it compacted."""
        active = [m.to_message() for m in meta if m.archived_by is None]
        if len(active) < 2:
            return False
        cal = model.estimator.calibration
        estimate = sum(scaled(sized_cost(model.counter, m, sizes[m.id]), cal) for m in active)
        stats = self.store.usage_stats(model.spec.name, record.id)
        if stats.last_actual and stats.last_estimate:
            estimate = round(estimate * max(1.0, stats.last_actual / stats.last_estimate))
        threshold = record.compaction_threshold or self.engine.config.compaction_threshold
        budget = self._conversation_budget(model, req)
        if estimate < threshold * budget:
            return False
        keep = int(budget * COMPACTION_KEEP_SHARE)
        compaction = self.compact(record.id, "summary", auto=True, keep_tokens=keep, path=meta)
        if compaction is None:
            return False
        self._events.append(("ctx/compacted", msgspec.to_builtins(compaction)))
        return True

    def compact(
        self,
        session: str,
        strategy: str = "summary",
        *,
        dry_run: bool = False,
        summary: str | None = None,
        auto: bool = False,
        model_name: str | None = None,
        keep_tokens: int | None = None,
        path: list[MessageMeta] | None = None,
    ) -> Compaction | None:
        """Summarise (or, with ``trim``, just archive) the older turns of the active branch: all
        but the current turn when asked for, and when automatic all but the newest turns that
        fit half the conversation budget.
        Nothing is deleted: archived messages stay in the store and in ``ctx/listMessages``.
        ``path`` is the branch's path when the caller has just read it."""
        if not dry_run:
            self.require_memory()
        record = self.open_session(session)
        model, _ = self.calibrated(model_name or record.model)
        counter, cal = model.counter, model.estimator.calibration
        stored = path if path is not None else self.store.path_meta(session, record.branch)
        active_meta = [m for m in stored if m.archived_by is None]
        sizes = self._sizes(session, active_meta, counter)

        def cost(msgs) -> int:
            return sum(scaled(sized_cost(counter, m, sizes[m.id]), cal) for m in msgs)

        active = [m.to_message() for m in active_meta]
        turns = group_turns(active)
        # automatic: keep the newest turns that fill half the budget; asked for: keep only the current turn
        if keep_tokens is None:
            keep_tokens = int(self._conversation_budget(model) * COMPACTION_KEEP_SHARE) if auto else 0
        archive, kept = split_for_compaction(turns, cost, keep_tokens)
        if not archive:
            if auto:
                return None
            raise UserError("nothing to compact: the conversation is only its current turn")
        previous = self._summary_for(session, stored)
        prev_digest = msgspec.json.decode(previous["digest"], type=Digest) if previous and previous["digest"] else None
        # what the summary is made from: the archived texts, a large one by its head
        heads = self.store.contents(session, [m.id for m in archive], prefix=True)
        texts = [msgspec.structs.replace(m, content=heads.get(m.id, "")) for m in archive]
        big = {m.id: sizes[m.id].bytes for m in archive}
        number = 1 + max((c["number"] for c in self.store.compactions(session)), default=0)
        note = None
        if summary is not None:
            text, digest, summarizer, ms = summary, extract_digest(texts, prev_digest, big), "edited", 0.0
        elif strategy == "trim":
            text, digest, summarizer, ms = "", extract_digest(texts, prev_digest, big), "trim", 0.0
        else:
            config = self.engine.config
            client = ChatClient(config.llm) if config.summarizer == "llm" else None
            llm_counter = counter_for("cl100k_base")
            text, digest, summarizer, note, ms = summarise(
                texts,
                number,
                prev_digest,
                previous["summary"] if previous else None,
                use_llm=client is not None,
                client=client,
                count=llm_counter.count,
                window=config.llm.context_length,
                sizes=big,
            )
        before = cost(active) + (counter.count(previous["summary"]) if previous else 0)
        after = cost(kept) + counter.count(text)
        compaction = Compaction(
            number=number,
            session=session,
            branch=record.branch,
            summary=text,
            archived_ids=[m.id for m in archive],
            tokens_before=before,
            tokens_after=after,
            milliseconds=round(ms, 2),
            summarizer=summarizer,
            note=note,
            applied=not dry_run,
        )
        if not dry_run:
            compaction.number = self.store.add_compaction(
                session,
                record.branch,
                text,
                msgspec.json.encode(digest),
                compaction.archived_ids,
                before,
                after,
                compaction.milliseconds,
                summarizer,
                note,
            )
        return compaction

    # ---- capsules ------------------------------------------------------------------------------

    def capsule_items(self, cal: float) -> list[Item]:
        counter = counter_for("cl100k_base")
        include_stale = self.engine.config.include_stale_capsules
        out = []
        for c in self.store.capsules():
            text = self.engine.mask_text(c["text"])  # also what was made before masking was on
            stale = c["stale"] and not include_stale
            if c["stale"] and include_stale:
                text = "[STALE: the module changed since this capsule was made]\n" + text
            out.append(
                Item(
                    id=f"capsule:{c['path']}@{c['codeHash'][:12]}",
                    section="system",
                    kind=CAPSULE,
                    title=f"capsule {c['module']}",
                    text=text,
                    tokens=scaled(counter.count(text) + 1, cal),
                    path=c["path"],
                    symbol=c["module"],
                    stale=stale,
                    detail=f"{c['source']} capsule, confidence {c['confidence']:.1f}"
                    + (" · STALE" if c["stale"] else "")
                    + (f" · {masked}" if (masked := masked_detail(text)) else ""),
                )
            )
        return out

    def capsules(self) -> list[dict[str, Any]]:
        return self.store.capsules()

    def refresh_capsules(self, paths: list[str] | None = None) -> list[dict[str, Any]]:
        """(Re)generate capsules: for ``paths``, else for stale ones and the most central modules."""
        index = self.engine.index
        if paths is None:
            stale = [c["path"] for c in self.store.capsules() if c["stale"]]
            central = []
            for qualname in index.central_symbols(CENTRAL_CAPSULES * 3):
                sym = index.get(qualname)
                if sym is not None and sym.path not in central:
                    central.append(sym.path)
            paths = list(dict.fromkeys([*stale, *central[:CENTRAL_CAPSULES]]))
        config = self.engine.config
        client = ChatClient(config.llm) if config.summarizer == "llm" else None
        count = counter_for("cl100k_base").count
        for rel in paths:
            try:
                source = read_workspace_text(self.engine.root, rel)
            except PathRefused as err:
                raise UserError(str(err)) from None
            except OSError as err:
                raise NotFound(f"cannot read {rel}: {err.strerror or err}") from None
            symbols = index.symbols_in(rel)
            if not symbols:
                raise NotFound(f"{rel} is not an indexed Python module")
            module = next((s.qualname for s in symbols if s.kind == "module"), rel)
            imports = [t for _, t in index.imports_of(rel) if index.get(t) is not None]
            used_by = index.importers_of(module)
            text, source_kind, confidence, _note = make_capsule(
                rel,
                module,
                self.engine.mask_text(source, rel),  # a summariser is a model too
                symbols,
                imports,
                used_by,
                client=client,
                count=count,
                window=config.llm.context_length,
            )
            self.store.put_capsule(rel, module, text, code_hash(source), source_kind, confidence)
        return self.store.capsules()

    def ensure_capsules(self) -> None:
        """At start-up: capsules for the most central modules, when the workspace has none yet."""
        if not self.store.capsules():
            with contextlib.suppress(NotFound):  # a workspace with no modules: nothing to summarise
                self.refresh_capsules(None)

    def file_saved(self, rel: str, text: str | None = None) -> list[dict[str, Any]]:
        """A file was saved (or changed on disk): is its capsule stale now? Returns the capsules
        that just became stale (to notify), after updating the stored state."""
        if text is None:
            try:
                text = read_workspace_text(self.engine.root, rel)
            except (OSError, PathRefused):
                text = None
        became = self.store.check_capsule(rel, code_hash(text) if text is not None else None)
        if became:
            return [c for c in self.store.capsules() if c["path"] == rel]
        return []

    def replan_latest(self, session: str) -> PlanOutcome | None:
        """Ask the session's latest question again, the same way (after a pin, a mode change, new
        messages): the meter and the tree then show the new state."""
        plan_id = self.store.latest_plan_id(session)
        if plan_id is None:
            return None
        row = self.store.plan_row(plan_id, session)
        options = row["options"]
        focus = options.pop("focus", None)
        return self.plan(
            SessionPlanRequest(session=session, query=row["query"], focus=Focus(**focus) if focus else None, **options)
        )

    def _remember(self, outcome: PlanOutcome) -> None:
        self._outcomes[outcome.result.plan.plan_id] = outcome
        self._outcomes.move_to_end(outcome.result.plan.plan_id)
        while len(self._outcomes) > SESSION_PLAN_CACHE:
            self._outcomes.popitem(last=False)

    def outcome(self, session: str, plan_id: str | None) -> PlanOutcome:
        """A stored plan, rebuilt from its stored inputs when it is not in memory."""
        plan_id = plan_id or self.store.latest_plan_id(session)
        if plan_id is None:
            raise NotFound(f"session {session!r} has no plan yet: call ctx/planContext first")
        cached = self._outcomes.get(plan_id)
        if cached is not None:
            return cached
        try:
            row = self.store.plan_row(plan_id)
        except StoreError as err:
            raise NotFound(str(err)) from None
        inputs = self.store.plan_inputs(row)
        counter = counter_for(inputs.estimator.encoding)
        outcome = PlanOutcome(result=plan(inputs), inputs=inputs, counter=counter, timings_ms={})
        self._remember(outcome)
        return outcome

    def replay(self, plan_id: str) -> tuple[bool, PlanResult]:
        """Rebuild a stored plan from its stored inputs: same id and same bytes?"""
        try:
            row = self.store.plan_row(plan_id)
        except StoreError as err:
            raise NotFound(str(err)) from None
        inputs = self.store.plan_inputs(row)
        result = plan(inputs)
        identical = result.plan.plan_id == plan_id and msgspec.json.encode(result.plan) == row["plan"]
        return identical, result

    def ledger(self, session: str, plan_id: str | None, turns: int = LEDGER_TURNS) -> list[dict[str, Any]]:
        """The dropped ledger: excluded items of the session's recent plans, per turn."""
        self.open_session(session)
        rows = self.store.plans(session, limit=200)
        if plan_id is not None:
            rows = [r for r in rows if r["id"] == plan_id]
            if not rows:
                raise NotFound(f"no stored plan {plan_id!r} in session {session!r}")
        out, seen_turns = [], []
        for r in rows:
            if r["turn"] in seen_turns:  # the latest plan of each turn
                continue
            seen_turns.append(r["turn"])
            p = msgspec.json.decode(r["plan"])
            query = self.store.plan_row(r["id"], session)["query"]
            out.append({"planId": r["id"], "turn": r["turn"], "query": query, "excluded": p["excluded"]})
            if len(out) >= turns:
                break
        return out

    def excluded_item(self, session: str, item_id: str, plan_id: str | None):
        """Find an excluded item of the ledger, for restoring it by pinning."""
        for turn in self.ledger(session, plan_id, turns=50):
            for item in turn["excluded"]:
                if item["id"] == item_id:
                    return item
        raise NotFound(f"item {item_id!r} is not in the dropped ledger of session {session!r}")

    # ---- usage and the meter -----------------------------------------------------------------

    def report_usage(
        self, session: str, plan_id: str, input_tokens: int, output_tokens: int, cached: int
    ) -> tuple[dict[str, Any], list[PinRecord], list[PinRecord]]:
        self.require_memory()
        for label, value in (
            ("inputTokens", input_tokens),
            ("outputTokens", output_tokens),
            ("cachedInputTokens", cached),
        ):
            if value < 0:
                raise UserError(f"{label} must be 0 or more, got {value}")
        outcome = self.outcome(session, plan_id)
        model_name = outcome.inputs.model
        before, _ = self.calibrated(model_name)
        estimate = outcome.result.plan.totals.tokens
        raw = max(1, round(estimate / outcome.inputs.estimator.calibration))
        self.store.record_usage(plan_id, session, model_name, estimate, raw, input_tokens, cached, output_tokens)
        turn, asked, expired = self.store.advance_turn(session)
        self._reflect(session, outcome, turn - 1, expired)
        after, stats = self.calibrated(model_name)
        report = {
            "planId": plan_id,
            "model": model_name,
            "estimate": estimate,
            "inputTokens": input_tokens,
            "cachedInputTokens": cached,
            "outputTokens": output_tokens,
            "error": input_tokens - estimate,
            "errorPercent": round(100 * (input_tokens - estimate) / estimate, 2) if estimate else 0.0,
            "calibrationBefore": before.estimator.calibration,
            "calibrationAfter": after.estimator.calibration,
            "spread": stats.spread,
            "reports": stats.reports,
            "turn": turn,
            "expiredPins": [p.id for p in expired],
            "askRepin": [p.id for p in asked],
        }
        return report, asked, expired

    def meter(self, session: str) -> dict[str, Any]:
        record = self.open_session(session)
        plan_id = self.store.latest_plan_id(session)
        model, stats = self.calibrated(record.model, session)
        mode = record.mode or self.engine.config.mode
        if plan_id is not None:
            p = self.outcome(session, plan_id).result.plan
            used, budget, context_length = p.totals.tokens, p.prompt_budget, p.context_length
            sections = [{"name": s.name, "budget": s.budget, "used": s.used, "count": s.count} for s in p.sections]
            est, model_name = p.estimator, p.model
        else:  # no plan yet: the budget a plan would have
            spec = self.engine.budget(model)
            used, budget, context_length = 0, spec.prompt_budget, spec.context_length
            sections, est, model_name = [], model.estimator, model.spec.name
        estimator = {
            "encoding": est.encoding,
            "exact": est.exact,
            "calibration": est.calibration,
            "spread": stats.spread,
            "reports": stats.reports,
        }
        return {
            "session": session,
            "model": model_name,
            "mode": mode,
            "contextLength": context_length,
            "promptBudget": budget,
            "used": used,
            "percent": round(100 * used / budget, 1) if budget > 0 else 0.0,
            "sections": sections,
            "estimator": estimator,
            "planId": plan_id,
            "turn": record.turn,
            "lastEstimate": stats.last_estimate,
            "lastActual": stats.last_actual,
            "text": f"ctx {format_tokens(used)} / {format_tokens(budget)}",
        }


def _options_of(req: SessionPlanRequest) -> dict[str, Any]:
    """The parameters of a plan request worth repeating in a re-plan (not the what-if parts)."""
    out: dict[str, Any] = {
        k: getattr(req, k)
        for k in ("model", "context_length", "max_completion_tokens", "safety_buffer", "rag_budget", "open_files")
        if getattr(req, k) is not None and getattr(req, k) != []
    }
    if req.focus is not None:
        out["focus"] = {"path": req.focus.path, "line": req.focus.line}
    return out
