"""The reflection loop of a session (docs/reflection.md): at the end of each turn, activation
from what the plan held and what the model and the user named; leases promoted, renewed and
demoted; the model's suggestions recorded. Each decision is kept, explained and undoable."""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field

import msgspec

from ctx_lsp.core.items import ContextPlan
from ctx_lsp.engine import UserError
from ctx_lsp.memory import reflection
from ctx_lsp.memory.store import PinRecord, SessionRecord, StoreError
from ctx_lsp.sessions.events import Reflected
from ctx_lsp.sessions.pins import Pins
from ctx_lsp.sessions.records import Reflection, Suggestion, records
from ctx_lsp.sessions.shared import NotFound, Shared
from ctx_lsp.sessions.values import PinIntent
from ctx_lsp.workspace.languages import language_of


@dataclass(slots=True)
class Reflections:
    shared: Shared
    pins: Pins
    # per session: the current cluster's centroid as stored (its JSON) and as counts kept to
    # compare queries with — a long session's centroid holds hundreds of terms, read once
    centroids: dict[str, tuple[str, reflection.Centroid]] = field(default_factory=dict)

    def activation(self, session: str) -> dict[str, reflection.Activation]:
        blob = self.shared.store.activation_state(session)
        return msgspec.json.decode(blob, type=dict[str, reflection.Activation]) if blob else {}

    def reflections(self, session: str) -> list[Reflection]:
        self.shared.open_session(session)
        return self._entries(session)

    def _entries(self, session: str) -> list[Reflection]:
        return records(self.shared.store.reflections(session), Reflection)

    def suggestions(self, session: str) -> list[Suggestion]:
        self.shared.open_session(session)
        return records(self.shared.store.suggestions(session), Suggestion)

    def cluster_for(self, record: SessionRecord, query: str, *, persist: bool) -> str | None:
        """The query's cluster ("task"). Moving to another cluster ends the task-scoped leases
        made in the previous one."""
        if not query.strip():
            return None
        store = self.shared.store
        _, current, centroid_json, next_id = store.reflection_state(record.id)
        current_pair = None
        if current is not None and centroid_json:
            current_pair = (current, self._centroid(record.id, centroid_json))
        cluster, q, new = reflection.join_cluster(query, current_pair, next_id)
        if persist:
            # the kept counts change in place: forgotten until what they say is stored
            self.centroids.pop(record.id, None)
            if new or current_pair is None:
                centroid = reflection.Centroid(Counter(q))
            else:
                centroid = current_pair[1]
                centroid.add(q)
            # stored in the order its terms came (earlier versions sorted them: read the same), so
            # no plan sorts hundreds of terms
            saved = msgspec.json.encode(centroid.counts).decode()
            if (cluster, saved, next_id + new) != (current, centroid_json, next_id):  # a re-plan changes nothing
                store.save_cluster(record.id, cluster, saved, next_id + new)
            self.centroids[record.id] = (saved, centroid)
            if new and current is not None:
                faded = reflection.task_switch(self.activation(record.id))
                store.save_activation(record.id, msgspec.json.encode(faded))
                for pin_id, symbol in store.task_pins_outside(record.id, record.branch, cluster):
                    store.set_pin_ttl(record.id, record.branch, pin_id, 0, status="expired")
                    self._note(
                        record.id,
                        record.turn,
                        "demote",
                        symbol or pin_id,
                        pin_id,
                        f"task lease ended: the conversation moved from task {current} to task {cluster}",
                    )
        return cluster

    def _centroid(self, session: str, stored: str) -> reflection.Centroid:
        """The current cluster's centroid, as the store holds it (JSON ``stored``): the kept one
        while it is what the store holds (another process may have moved on), else decoded."""
        kept = self.centroids.get(session)
        if kept is None or kept[0] != stored:
            kept = self.centroids[session] = (stored, reflection.Centroid(Counter(msgspec.json.decode(stored))))
        return kept[1]

    def _note(
        self, session: str, turn: int, kind: str, item: str, pin_id: str | None, reason: str, task: str | None = None
    ) -> None:
        rid = self.shared.store.record_reflection(session, turn, kind, item, pin_id, reason, task)
        entry = Reflection(id=rid, turn=turn, kind=kind, item=item, pin_id=pin_id, reason=reason, task=task)  # type: ignore[arg-type]
        self.shared.events.append(Reflected(session, entry))

    def reflect(self, session: str, plan: ContextPlan, turn: int, expired: list[PinRecord]) -> None:
        """A turn ended: update activation from what was in the plan and what the model and the
        user named; promote, renew and demote leases; record the model's suggestions."""
        store = self.shared.store
        record = store.session(session)
        index = self.shared.engine.index
        messages = [m.to_message() for m in store.turn_messages(session, turn)]

        def resolve(word: str) -> str | None:
            is_path = language_of(word) is not None
            sym = index.resolve_name(word) if not is_path else None
            if sym is None and is_path:
                mod = next((s for s in index.symbols_in(word) if s.kind == "module"), None)
                return mod.qualname if mod else None
            return sym.qualname if sym is not None and sym.kind != "module" else None

        model_text = "\n".join(
            [m.content for m in messages if m.role == "assistant"]
            + [c.arguments for m in messages for c in m.tool_calls]
        )
        user_text = "\n".join(m.content for m in messages if m.role == "user")
        included = {i.symbol for i in plan.included if i.symbol and i.section in ("rag", "system")}
        model_named = reflection.named_in(model_text, resolve)
        user_named = reflection.named_in(user_text, resolve)
        scores = reflection.update(self.activation(session), turn, included, model_named, user_named)
        store.save_activation(session, msgspec.json.encode(scores))

        pins = store.pins(session, record.branch)
        leased = {p.symbol for p in pins if p.kind == "leased" and p.symbol}
        sticky = {p.symbol for p in pins if p.kind == "sticky" and p.symbol}
        for p in pins:  # a lease that keeps being used is renewed
            if p.kind == "leased" and p.created_by == "auto" and p.symbol in model_named:
                store.set_pin_ttl(session, record.branch, p.id, reflection.LEASE_TURNS)
                self._note(
                    session,
                    turn,
                    "renew",
                    p.symbol or p.id,
                    p.id,
                    f"lease renewed for {reflection.LEASE_TURNS} turns: the model used it this turn",
                )
        for p in expired:
            if p.created_by == "auto":
                self._note(
                    session, turn, "demote", p.symbol or p.id, p.id, "lease ran out: not used for its whole lease"
                )
        retrieved = {i.symbol for i in plan.included if i.section == "rag" and i.symbol}
        cluster = store.current_cluster(session)
        # the user undid a promotion: it stays undone for the rest of that task
        refused = {r.item for r in self._entries(session) if r.kind == "promote" and r.undone and r.task == cluster}
        for symbol, reason in reflection.promotions(scores, leased | refused, sticky, retrieved, model_named):
            intent = PinIntent(
                symbol=symbol, kind="leased", ttl=reflection.LEASE_TURNS, lease_scope="task", created_by="auto"
            )
            pin = self.pins.pin(session, intent).record
            store.set_pin_cluster(session, record.branch, pin.id, cluster)
            self._note(session, turn, "promote", symbol, pin.id, reason, cluster)
        for name in reflection.suggestions_in(model_text):
            target = resolve(name) or name
            if store.add_suggestion(session, target, turn, f"suggested by the model in turn {turn}"):
                self._note(session, turn, "suggest", target, None, f"the model suggested {name!r}")

    def undo(self, session: str, reflection_id: int) -> Reflection:
        """Undo a promotion (remove the automatic pin) or a demotion (restore the lease)."""
        self.shared.require_memory()
        record = self.shared.open_session(session)
        store = self.shared.store
        entry = next((r for r in self._entries(session) if r.id == reflection_id), None)
        if entry is None:
            raise NotFound(f"no reflection {reflection_id} in session {session!r}")
        if entry.undone:
            raise UserError(f"reflection {reflection_id} was already undone")
        if entry.kind == "promote" and entry.pin_id:
            with contextlib.suppress(StoreError):
                store.remove_pin(session, record.branch, entry.pin_id)
        elif entry.kind == "demote" and entry.pin_id:
            store.set_pin_ttl(session, record.branch, entry.pin_id, reflection.LEASE_TURNS)
        elif entry.kind == "suggest":
            store.set_suggestion_status(session, entry.item, "dismissed")
        else:
            raise UserError(f"a {entry.kind} cannot be undone")
        store.mark_reflection_undone(session, reflection_id)
        return msgspec.structs.replace(entry, undone=True)
