"""Pins: the symbol a pin names (by qualified name, or at a cursor), pins made and removed, and
pins as the planner sees them — the session's own, and the imagined ones of a what-if plan,
built the same way so that a what-if plan shows what the real pin would do."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

from ctx_lsp.core.items import Item, PinnedItem, PinSpec
from ctx_lsp.engine import UserError
from ctx_lsp.memory.store import PinRecord, SessionRecord
from ctx_lsp.sessions.shared import NotFound, Shared, found
from ctx_lsp.sessions.values import PinIntent, PinState
from ctx_lsp.workspace import cards, resolve
from ctx_lsp.workspace.files import PathRefused, read_workspace_text
from ctx_lsp.workspace.languages import kind_label, language_of

if TYPE_CHECKING:
    from ctx_lsp.workspace.index import IndexedSymbol

WHAT_IF_SEQ = 10**9  # what-if pins are newer than every real one
_WORD_AT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(slots=True)
class Pins:
    shared: Shared

    def resolve(self, intent: PinIntent) -> IndexedSymbol:
        """The indexed symbol a pin intent names: by qualified name, or at a position (the
        name under the cursor if it resolves, else the innermost enclosing definition). At a
        C++ header's declaration: its code, where the .cpp defines it."""
        sym = self._named(intent)
        return self.shared.engine.index.code_of(sym) or sym

    def _named(self, intent: PinIntent) -> IndexedSymbol:
        index = self.shared.engine.index
        if intent.symbol:
            found = index.lookup(intent.symbol, intent.path)
            if found.symbol is None:
                raise NotFound(found.problem() or f"no symbol {intent.symbol!r}")
            return found.symbol
        if intent.path is None or intent.line is None:
            raise UserError("a pin needs a symbol name, or a document and a position")
        if intent.text is not None:
            index.update_file(intent.path, intent.text.encode("utf-8"))
        word = self._word_at(intent)
        enclosing = index.symbol_at(intent.path, intent.line)
        if word and not (enclosing is not None and enclosing.name == word and enclosing.start_line <= intent.line):
            sym = index.resolve_name(word, intent.path)
            root, char = self.shared.engine.root, intent.character or 0
            python = language_of(intent.path) == "python"  # jedi reads Python; elsewhere the name decides
            if python and (sym is None or resolve.is_attribute(root, intent.path, intent.text, intent.line, char)):
                # jedi (time-limited) follows imports and infers ``obj.method``; the name lookup
                # stays the answer when jedi has none
                found_name = resolve.resolve_at(root, intent.path, intent.text, intent.line, char)
                sym = (index.resolve_name(found_name, intent.path) if found_name else None) or sym
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
                text = read_workspace_text(self.shared.engine.root, intent.path)
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

    def pin(self, session: str, intent: PinIntent) -> PinState:
        shared = self.shared
        shared.require_memory()
        record = shared.open_session(session)
        sym = self.resolve(intent)
        if intent.created_by == "user":  # the user took up a suggestion (a no-op when there was none)
            shared.store.set_suggestion_status(session, sym.qualname, "accepted")
        return self.state(shared.store.add_pin(_record(record, sym, intent)))

    def unpin(self, session: str, pin_id: str) -> PinState:
        self.shared.require_memory()
        record = self.shared.open_session(session)
        with found():
            return self.state(self.shared.store.remove_pin(session, record.branch, pin_id))

    def pins(self, session: str) -> list[PinState]:
        record = self.shared.open_session(session)
        return [self.state(p) for p in self.shared.store.pins(session, record.branch)]

    def state(self, pin: PinRecord) -> PinState:
        sym = self._pinned_symbol(pin)
        return PinState(pin, None if sym is None else sym.body_tokens + sym.header_tokens)

    def _pinned_symbol(self, pin: PinRecord) -> IndexedSymbol | None:
        """The symbol a pin holds: by its name, in the file it was pinned in while that file has
        it (one name in several files: each C program's ``main``), nearest the line it was pinned
        at (a type and a value of one name), else wherever the name went."""
        return self.shared.engine.index.get(pin.symbol, pin.path, pin.start_line) if pin.symbol else None

    def pinned_items(
        self, record: SessionRecord, what_if: list[PinIntent], calibration: float, notes: list[str]
    ) -> list[PinnedItem]:
        """The session's pins as the planner sees them, then the what-if ones (``what_if``)."""
        out = []
        for p in self.shared.store.pins(record.id, record.branch):
            sym = self._pinned_symbol(p)
            if sym is None:
                notes.append(f"pin {p.id}: {p.symbol} is no longer in the workspace; unpin it or pin its new name")
                continue
            out.append(_pinned(p, sym, calibration))
        for n, intent in enumerate(what_if):
            sym = self.resolve(intent)
            imagined = msgspec.structs.replace(
                _record(record, sym, intent), id=f"what-if:{sym.qualname}", seq=WHAT_IF_SEQ + n
            )
            out.append(_pinned(imagined, sym, calibration))
        return out


def _record(session: SessionRecord, sym: IndexedSymbol, intent: PinIntent) -> PinRecord:
    """The pin an intent makes (its id and order are the store's to give)."""
    if intent.ttl is not None and intent.ttl < 0:
        raise UserError(f"ttl must be 0 or more turns, got {intent.ttl}")
    return PinRecord(
        id=f"pin:{sym.qualname}",
        session=session.id,
        branch=session.branch,
        created_turn=session.turn,
        status="active",
        seq=0,
        kind=intent.kind,
        policy=intent.policy,
        ttl=intent.ttl,
        ttl_remaining=intent.ttl,
        lease_scope=intent.lease_scope,
        priority=intent.priority,
        created_by=intent.created_by,
        title=f"{kind_label(sym.kind, sym.signature)} {sym.qualname}",
        symbol=sym.qualname,
        path=sym.path,
        start_line=sym.start_line,
        end_line=sym.end_line,
    )


def _pinned(p: PinRecord, sym: IndexedSymbol, calibration: float) -> PinnedItem:
    spec = PinSpec(
        pin_id=p.id, kind=p.kind, policy=p.policy, ttl_remaining=p.ttl_remaining, priority=p.priority, seq=p.seq
    )
    item: Item = cards.body_item(sym, calibration, section="system")
    return PinnedItem(spec, item)
