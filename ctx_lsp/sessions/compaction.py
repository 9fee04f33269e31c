"""Compaction of a session's conversation: asked for, or automatic before a plan once the
conversation reaches its threshold share of the conversation budget. Archived messages are
never deleted: they stay in the store and in ``ctx/listMessages``."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from ctx_lsp.core.conversation import Sized, estimated_cost, group_turns
from ctx_lsp.core.items import BudgetSpec
from ctx_lsp.core.prompt_cache import CACHE_TTL_SECONDS, warm_until
from ctx_lsp.core.tokens import counter_for, scaled
from ctx_lsp.engine import ResolvedModel, UserError
from ctx_lsp.memory.compaction import Compaction, Digest, extract_digest, split_for_compaction, summarise
from ctx_lsp.memory.llm import WINDOW_ENCODING, ChatClient
from ctx_lsp.memory.store import MessageMeta, SessionRecord
from ctx_lsp.sessions.cache_plan import step_pays, step_sizes, turn_start_trigger
from ctx_lsp.sessions.calibration import Calibration
from ctx_lsp.sessions.conversation import Conversation
from ctx_lsp.sessions.events import Compacted
from ctx_lsp.sessions.shared import Shared

COMPACTION_KEEP_SHARE = 0.5  # a compaction asked for without a budget keeps at most half of it


def conversation_budget(budget: BudgetSpec) -> int:
    """The conversation section's share of a prompt budget."""
    return max(0, int(budget.prompt_budget * budget.shares.conversation))


@dataclass(slots=True)
class Compactions:
    shared: Shared
    calibration: Calibration
    conversation: Conversation

    def summary_for(self, session: str, path: Sequence[MessageMeta]) -> dict[str, Any] | None:
        """The latest compaction whose archived messages are on this path (branches share them).
        ``path``: the whole path, or only its archived messages (``MemoryStore.path_parts``):
        the compactions' messages are among them, and a long path's active part is then not
        looked through."""
        on_path: set[str] | None = None
        for c in reversed(self.shared.store.compactions(session)):
            if not c["archivedIds"]:
                continue
            last = c["archivedIds"][-1]
            if on_path is None:
                # the latest one's last message usually sits just before the active part: found
                # from the end of a long path without reading all of it
                if any(m.id == last for m in reversed(path)):
                    return c
                on_path = {m.id for m in path}
            elif last in on_path:
                return c
        return None

    def set_memory_policy(self, session: str, rolling: bool | None, threshold: float | None) -> SessionRecord:
        self.shared.require_memory()
        if threshold is not None and not 0.1 <= threshold <= 1.0:
            raise UserError(f"compactionThreshold must be between 0.1 and 1.0, got {threshold}")
        self.shared.open_session(session)
        self.shared.store.set_memory_policy(session, rolling, threshold)
        return self.shared.store.session(session)

    def maybe_compact(
        self,
        record: SessionRecord,
        model: ResolvedModel,
        budget: BudgetSpec,
        parts: tuple[Sequence[MessageMeta], list[MessageMeta]],
        sizes: dict[str, Sized],
        live_turn: bool = False,
        force: bool = False,
        cache_ttl: int = CACHE_TTL_SECONDS,
        carried: int = 0,
    ) -> bool:
        """Threshold compaction before a plan with ``budget``: a step when the active conversation
        (with the compaction summary it carries) reaches the size the money chooses
        (``cache_plan.step_sizes``: at the latest the threshold share of the conversation budget)
        — measured from the last actual usage when there is one (scaled by how far off the
        estimate was), from stored counts otherwise — summarising older turns down to the kept
        share. ``force``: now, whatever the size (the plan would otherwise mask or shed between
        steps). ``live_turn``: the path ends in the turn being asked (the gateway), which may then
        give up its own oldest tool exchanges. Returns whether it compacted. ``parts``: the
        branch's path as (archived, active) messages. ``carried``: tokens of ctx_lsp's own blocks
        in the prompt (``cache_plan.step_sizes``)."""
        active = [m.to_message() for m in parts[1]]
        if len(active) < 2:
            return False
        cal = model.estimator.calibration
        estimate = sum(estimated_cost(model.counter, m, sizes[m.id], cal) for m in active)
        done = self.shared.store.compactions(record.id)
        summary = scaled(model.counter.count(done[-1]["summary"] or ""), cal) if done else 0
        estimate += summary
        stats = self.shared.store.usage_stats(model.spec.name, record.id)
        if stats.last_actual and stats.last_estimate:
            estimate = round(estimate * max(1.0, stats.last_actual / stats.last_estimate))
        threshold = record.compaction_threshold or self.shared.engine.config.compaction_threshold
        room = conversation_budget(budget)
        # each request appends about one reply and what answers it
        replies = sum(m.role == "assistant" for m in active)
        growth = estimate / replies if replies else 0.0
        # idle past the provider's cache TTL, the next request writes its whole prompt anyway: the
        # cheapest moment for a step
        last = self.shared.store.last_gateway_request(record.id)
        cold = last is not None and warm_until(last, time.time(), cache_ttl) is None
        sizes_now = step_sizes(room, threshold, growth, model.spec.prices, summary, cold, carried)
        trigger, turn_growth = sizes_now.trigger, 0.0
        # the requests so far, archived ones too: counted only when a step is weighed (the
        # archive grows with the session; most plans return below the trigger)
        requests = (
            replies + sum(m.role == "assistant" for m in parts[0]) if live_turn or force or estimate >= trigger else 0
        )
        if live_turn and active[-1].role == "user":
            # a turn's first request: a turn that would reach the step size anyway (growing as this
            # conversation's turns have) steps here, where a step keeps the new user message and
            # not a quarter of a running agent loop — the cheapest rewrite, and none in the loop
            turns = sum(m.role == "user" for m in parts[0]) + sum(m.role == "user" for m in active)
            turn_growth = growth * requests / max(1, turns - 1)
            trigger = turn_start_trigger(sizes_now, turn_growth)
        if not force and estimate < trigger:
            return False
        # the window forces a step within this turn anyway: now is the cheapest moment
        forced = estimate + turn_growth >= sizes_now.limit
        if (
            not force
            and not forced
            and not step_pays(estimate, sizes_now.keep + summary, requests, model.spec.prices, cold)
        ):
            return False  # below the window's limit, a step the rest of the session would not pay back
        compaction = self.compact(
            record.id, "summary", auto=True, keep_tokens=sizes_now.keep, parts=parts, split_current=live_turn
        )
        if compaction is None:
            return False
        self.shared.events.append(Compacted(record.id, compaction))
        return True

    def compact(
        self,
        session: str,
        strategy: str = "summary",
        *,
        dry_run: bool = False,
        summary: str | None = None,
        auto: bool = False,
        keep_tokens: int | None = None,
        parts: tuple[Sequence[MessageMeta], list[MessageMeta]] | None = None,
        split_current: bool = False,
    ) -> Compaction | None:
        """Summarise (or, with ``trim``, just archive) the older turns of the active branch: all
        but the current turn when asked for, and when automatic all but the newest turns that
        fit half the conversation budget (``keep_tokens``, when the caller knows the budget).
        ``parts`` are the branch's path as (archived, active) messages when the caller has just
        read it."""
        shared = self.shared
        store = shared.store
        if not dry_run:
            shared.require_memory()
        record = shared.open_session(session)
        model, _ = self.calibration.model(record.model)
        counter, cal = model.counter, model.estimator.calibration
        archived, active_meta = parts if parts is not None else store.path_parts(session, record.branch)
        sizes = self.conversation.sizes(session, active_meta, counter)

        def cost(msgs) -> int:
            return sum(estimated_cost(counter, m, sizes[m.id], cal) for m in msgs)

        active = [m.to_message() for m in active_meta]
        turns = group_turns(active)
        # automatic: keep the newest turns that fill half the budget; asked for: keep only the current turn
        if keep_tokens is None:
            room = conversation_budget(shared.engine.budget(model))
            keep_tokens = int(room * COMPACTION_KEEP_SHARE) if auto else 0
        archive, kept = split_for_compaction(turns, cost, keep_tokens, split_current=split_current)
        if not archive:
            if auto:
                return None
            raise UserError("nothing to compact: the conversation is only its current turn")
        previous = self.summary_for(session, archived)
        prev_digest = msgspec.json.decode(previous["digest"], type=Digest) if previous and previous["digest"] else None
        # what the summary is made from: the archived texts, a large one by its head
        heads = store.contents(session, [m.id for m in archive], prefix=True)
        texts = [msgspec.structs.replace(m, content=heads.get(m.id, "")) for m in archive]
        big = {m.id: sizes[m.id].bytes for m in archive}
        done = store.compactions(session)  # in order: the latest has the highest number
        number = 1 + (done[-1]["number"] if done else 0)
        note = None
        if summary is not None:
            text, digest, summarizer, ms = summary, extract_digest(texts, prev_digest, big), "edited", 0.0
        elif strategy == "trim":
            text, digest, summarizer, ms = "", extract_digest(texts, prev_digest, big), "trim", 0.0
        else:
            config = shared.engine.config
            client = ChatClient(config.llm) if config.summarizer == "llm" else None
            text, digest, summarizer, note, ms = summarise(
                texts,
                number,
                prev_digest,
                previous["summary"] if previous else None,
                use_llm=client is not None,
                client=client,
                count=counter_for(WINDOW_ENCODING).count,
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
            compaction.number = store.add_compaction(
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
