"""Plans, kept with the inputs that rebuild them (replay, telemetry), and usage reports.

A plan's inputs are stored msgpack-encoded and zlib-compressed (plans of a long session repeat
most of their text; compressed they take ~10x less room). Texts kept elsewhere are left out of
them and referenced: conversation messages by id, large conversation texts by hash in `bodies`,
and the texts of the retrieval candidates (hundreds of symbol cards and bodies, most of them the
same from one plan to the next) by hash in `bodies` too. A session's plans do not each keep a
copy of every large tool result, nor of the code they offered.
"""

from __future__ import annotations

import bisect
import collections
import sqlite3
import time
import zlib
from typing import Any

import msgspec

from ctx_lsp.core import calibration
from ctx_lsp.core.items import ContextPlan, PlanInput
from ctx_lsp.memory.store import bodies
from ctx_lsp.memory.store.codec import Codec
from ctx_lsp.memory.store.db import Database, StoreError
from ctx_lsp.memory.store.schema import PLANS, USAGE

# A text of a plan's inputs kept elsewhere: where it goes — a conversation message (turn, atom,
# 0 = messages / 1 = masked_messages, message), a required item (REQUIRED, item, 0, 0) or a
# retrieval candidate (CANDIDATE, item, 0, 0) — and its key: a body hash, or MESSAGE_REF + id.
BodyRef = tuple[int, int, int, int, str]
REQUIRED = -1
CANDIDATE = -2
MESSAGE_REF = "m:"  # a key naming a message of the plan's session, whose stored text it is
TEXT_REF = "t:"  # a key naming a candidate text in `texts`


class UsageStats(msgspec.Struct, kw_only=True):
    reports: int
    factor: float | None  # median of actual / raw estimate, once reports exist
    p90: float | None  # 90th percentile of the same ratio (the conservative calibration)
    spread: float | None  # (max - min) of the ratio
    calibration: float | None = None  # the factor planning uses (``core.calibration.factor``)
    window: int = 0  # how many latest reports it is the median of
    last_estimate: int | None
    last_actual: int | None


def plan_json(stored: bytes | str) -> bytes:
    """A stored plan's JSON: kept compressed (a plan lists hundreds of items with their reasons,
    ~200 kB of JSON that compresses ~10x), or as it is (stored by earlier versions, as bytes or
    text: JSON starts with ``{``, zlib's streams never do)."""
    if isinstance(stored, str):
        return stored.encode()
    return stored if stored[:1] == b"{" else zlib.decompress(stored)


PLAN_ROW = Codec.dicts(
    PLANS,
    ("id", "session", "branch", "turn", "query", "inputs", "plan", "tokens", "timings", "options", "bodies"),
    keep_names=True,
    plan=plan_json,
    options=lambda v: msgspec.json.decode(v) if v else {},
    bodies=lambda v: msgspec.json.decode(v, type=list[BodyRef]) if v else [],
)
PLAN_LISTED = Codec.dicts(PLANS, ("id", "session", "turn", "plan", "created"), keep_names=True, plan=plan_json)
SESSION_PLAN = Codec.dicts(PLANS, ("id", "turn", "query", "plan", "cluster"), keep_names=True, plan=plan_json)


class Plans(Database):
    def save_plan(
        self,
        session: str,
        branch: str,
        turn: int,
        query: str,
        inputs: PlanInput,
        plan: ContextPlan,
        timings: dict[str, float],
        options: dict[str, Any] | None = None,
        stored: frozenset[str] = frozenset(),
        *,
        later: bool = False,
    ) -> None:
        """Keep a plan with the inputs that rebuild them (for replay and telemetry). ``options`` are
        the request's parameters besides the query (model, budgets, focus…), so that a re-plan
        after a pin or a new message asks the same question the same way. ``stored``: ids of the
        conversation messages whose inputs text is their stored text (referenced, not copied).

        ``later``: written once the caller has answered (``flush``), or before anything else
        reads or writes the store, whichever comes first — a plan id handed out is always
        found by the next request."""
        row = {
            "id": plan.plan_id,
            "session": session,
            "branch": branch,
            "turn": turn,
            "created": time.time(),
            "query": query,
            "retrieval_set_id": plan.retrieval_set_id,
            "tokens": plan.totals.tokens,
            "prompt_budget": plan.prompt_budget,
            "timings": msgspec.json.encode(timings).decode(),
            "options": msgspec.json.encode(options or {}).decode(),
            "cluster": plan.cluster_id,
        }

        def write(conn: sqlite3.Connection) -> None:
            keys = self.text_keys
            blob, refs, texts, candidates = encode_inputs(inputs, stored, keys)
            for text in texts.values():  # conversation texts, by the hash put_body gives them
                bodies.put_body(conn, text)
            new = {h: t for h, t in candidates.items() if h not in keys.stored}
            bodies.put_texts(conn, new)
            row["inputs"] = blob
            row["plan"] = zlib.compress(msgspec.json.encode(plan), 1)
            row["bodies"] = msgspec.json.encode(refs).decode() if refs else None
            PLANS.insert(conn, row, verb="INSERT OR REPLACE")
            self.after_commit(lambda: keys.stored.update(new))

        if later:
            self.later(write)
        else:
            with self.write() as conn:
                write(conn)

    def _read_plans(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple]:
        """A read of the plans table: a plan put off until after its reply is written first."""
        return self._read(sql, args, flush=True)

    def plan_row(self, plan_id: str, session: str | None = None) -> dict[str, Any]:
        sql = f"SELECT {PLAN_ROW.select()} FROM plans WHERE id = ?"
        args: tuple[Any, ...] = (plan_id,)
        if session is not None:
            sql += " AND session = ?"
            args += (session,)
        rows = self._read_plans(sql + " ORDER BY created DESC LIMIT 1", args)
        if not rows:
            raise StoreError(f"no stored plan {plan_id!r}")
        return PLAN_ROW.decode(rows[0])

    def plan_inputs(self, row: dict[str, Any]) -> PlanInput:
        """The inputs of a stored plan (a ``plan_row``), texts read back from `bodies` and from
        the session's messages."""
        refs = row["bodies"]
        keys = {r[4] for r in refs}
        ids = sorted(k.removeprefix(MESSAGE_REF) for k in keys if k.startswith(MESSAGE_REF))
        with self.reading(flush=True) as conn:
            texts = bodies.texts(conn, sorted(k for k in keys if not k.startswith((MESSAGE_REF, TEXT_REF))))
            found = bodies.candidate_texts(conn, sorted(k.removeprefix(TEXT_REF) for k in keys if k[:2] == TEXT_REF))
            texts.update({TEXT_REF + h: text for h, text in found.items()})
        messages = self.contents(row["session"], ids) if ids else {}  # type: ignore[attr-defined]
        texts.update({MESSAGE_REF + mid: text for mid, text in messages.items()})
        return decode_inputs(row["inputs"], refs, texts)

    def latest_plan_id(self, session: str) -> str | None:
        rows = self._read_plans("SELECT id FROM plans WHERE session = ? ORDER BY created DESC LIMIT 1", (session,))
        return rows[0][0] if rows else None

    def plans(self, session: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        return [PLAN_LISTED.decode(r) for r in self._latest_plans(PLAN_LISTED.select(), session, limit)]

    def plan_summaries(self, session: str | None, limit: int) -> list[tuple[str, int, int, str, bytes]]:
        rows = self._latest_plans("session, tokens, prompt_budget, timings, plan", session, limit)
        return [(*r[:4], plan_json(r[4])) for r in rows]

    def _latest_plans(self, columns: str, session: str | None, limit: int) -> list[tuple]:
        where, args = (" WHERE session = ?", (session,)) if session is not None else ("", ())
        return self._read_plans(f"SELECT {columns} FROM plans{where} ORDER BY created DESC LIMIT ?", (*args, limit))

    def session_plans(self, session: str) -> list[dict[str, Any]]:
        sql = f"SELECT {SESSION_PLAN.select()} FROM plans WHERE session = ? ORDER BY created"
        rows = self._read_plans(sql, (session,))
        return [SESSION_PLAN.decode(r) for r in rows]

    # ---- usage ---------------------------------------------------------------------------------

    def record_usage(
        self,
        plan_id: str,
        session: str,
        model: str,
        estimate: int,
        raw_estimate: int,
        input_tokens: int,
        cached: int,
        output: int,
        media: int = 0,
    ) -> None:
        """``estimate`` is what the plan said (calibrated); ``raw_estimate`` its text before the
        calibration factor, which is what a new factor is learned from, against ``input_tokens``
        less ``media`` (the images and documents in both, counted the provider's way)."""
        row = {
            "plan_id": plan_id,
            "session": session,
            "model": model,
            "estimate": estimate,
            "raw_estimate": raw_estimate,
            "input_tokens": input_tokens,
            "cached_input_tokens": cached,
            "output_tokens": output,
            "created": time.time(),
            "media": media,
        }
        with self.write() as conn:
            USAGE.insert(conn, row)
            self.after_commit(lambda: self._reported(model, session, estimate, raw_estimate, input_tokens, media))

    def _reported(self, model: str, session: str, estimate: int, raw_estimate: int, actual: int, media: int) -> None:
        """A report is in: the kept ratios take it in order, the session's latest is this one."""
        memo = self.memo()
        ratios = memo.get(("ratios", model))
        if ratios is not None and raw_estimate > 0:
            ratio = _text_ratio(raw_estimate, actual, media)
            bisect.insort(ratios, ratio)
            memo["recent", model].append(ratio)
        memo["last", session] = (estimate, actual)

    def reset_calibration(self, model: str | None = None) -> int:
        """Forget what the usage reports of ``model`` (every model: None) taught the estimator;
        the reports stay for the cost figures. Returns how many were forgotten."""
        where, args = ("WHERE model = ? AND raw_estimate > 0", (model,)) if model else ("WHERE raw_estimate > 0", ())
        with self.write() as conn:
            n = conn.execute(f"UPDATE usage SET raw_estimate = 0 {where}", args).rowcount
            self.after_commit(self._memo.clear)
        return n

    def calibrated_models(self) -> list[str]:
        return [r[0] for r in self._read("SELECT DISTINCT model FROM usage WHERE raw_estimate > 0 ORDER BY model", ())]

    def warm_usage(self) -> None:
        """Every model's ratios read now, in one pass, before a request asks: a store with months
        of reports (6,454 of one model: 3-13 ms to read) made a face's first plan pay for them,
        and every request that arrived with it waited (thirty sub-agents starting at once)."""
        with self.reading():
            memo = self.memo()
            by_model: dict[str, list[float]] = {}
            for model, raw, actual, media in self._read(
                "SELECT model, raw_estimate, input_tokens, media FROM usage WHERE raw_estimate > 0 ORDER BY seq", ()
            ):
                by_model.setdefault(model, []).append(_text_ratio(raw, actual, media))
            for model, ordered in by_model.items():
                if ("ratios", model) not in memo:
                    _keep_ratios(memo, model, ordered)

    def usage_stats(self, model: str, session: str | None = None) -> UsageStats:
        """The model's calibration statistics over all its reports, and the session's latest report.
        The ratios are kept in memory, in order, as reports arrive: a plan asks several times, and
        a long session has hundreds of reports."""
        with self.reading():
            memo = self.memo()
            ratios = memo.get(("ratios", model))
            if ratios is None:
                rows = self._read(
                    "SELECT raw_estimate, input_tokens, media FROM usage"
                    " WHERE model = ? AND raw_estimate > 0 ORDER BY seq",
                    (model,),
                )
                ratios = _keep_ratios(memo, model, [_text_ratio(*row) for row in rows])
            recent = memo["recent", model]
            last: tuple[int | None, int | None] = (None, None)
            if session is not None:
                found = memo.get(("last", session))
                if found is None:
                    rows = self._read(
                        "SELECT estimate, input_tokens FROM usage WHERE session = ? ORDER BY seq DESC LIMIT 1",
                        (session,),
                    )
                    found = memo["last", session] = rows[0] if rows else (None, None)
                last = found
        last_estimate, last_actual = last
        stats = calibration.stats_of(ratios)
        return UsageStats(
            reports=stats.reports if stats else 0,
            factor=stats.median if stats else None,
            p90=stats.p90 if stats else None,
            spread=stats.spread if stats else None,
            calibration=calibration.factor(recent),
            window=len(recent),
            last_estimate=last_estimate,
            last_actual=last_actual,
        )

    def session_usage(self, session: str) -> list[tuple[str, int, int]]:
        return self._read(
            "SELECT plan_id, estimate, input_tokens FROM usage WHERE session = ? ORDER BY seq", (session,)
        )

    def usage_rows(self) -> list[tuple[str, int, int]]:
        return self._read("SELECT model, estimate, input_tokens FROM usage ORDER BY seq")


def encode_inputs(
    inputs: PlanInput, stored: frozenset[str] = frozenset(), keys: bodies.TextKeys | None = None
) -> tuple[bytes, list[BodyRef], dict[str, str], dict[str, str]]:
    """A plan's inputs as stored for replay, without the texts kept elsewhere: a conversation
    message whose text is the one stored for it (its id in ``stored``) is referenced by id
    (``m:<id>``: messages are never deleted); other texts large enough for `bodies` —
    conversation texts, a client's long system prompt and tools — and every retrieval
    candidate's text are referenced by hash (``keys`` remembers the hashes of texts seen before).
    A session's plans then do not each keep a copy of the whole conversation and of the code
    they offered. Returns (blob, references, conversation texts for `bodies` and candidate texts
    for `texts`, each by hash)."""
    refs: list[BodyRef] = []
    texts: dict[str, str] = {}
    keys = keys or bodies.TextKeys()

    def leave_out(where: tuple[int, int, int, int], text: str, mid: str | None) -> None:
        if mid is not None and mid in stored and text:
            refs.append((*where, MESSAGE_REF + mid))
            return
        data = bodies.large(text)
        if data is not None:
            h = bodies.body_hash(data)
            texts[h] = text
            refs.append((*where, h))

    for i, item in enumerate(inputs.required):
        leave_out((REQUIRED, i, 0, 0), item.text, None)
    for t, turn in enumerate(inputs.conversation.turns):
        for a, atom in enumerate(turn.atoms):
            for f, messages in enumerate((atom.messages, atom.masked_messages)):
                for k, m in enumerate(messages):
                    shown = atom.messages[k] if f == 1 and k < len(atom.messages) else m
                    leave_out((t, a, f, k), m.content, m.id if m.content == shown.content else None)
    candidates: dict[str, str] = {}
    for i, item in enumerate(inputs.candidates):
        if item.text:
            h = keys.key(item.text)
            candidates[h] = item.text
            refs.append((CANDIDATE, i, 0, 0, TEXT_REF + h))
    stored_inputs = _set_contents(inputs, {r[:4]: "" for r in refs})
    return zlib.compress(msgspec.msgpack.encode(stored_inputs), 1), refs, texts, candidates


def decode_inputs(blob: bytes, refs: list[BodyRef] | None = None, bodies: dict[str, str] | None = None) -> PlanInput:
    """Stored inputs back, with the texts ``refs`` name filled in from ``bodies`` (by hash, or by
    ``m:<id>`` for a message's stored text)."""
    try:
        raw = zlib.decompress(blob)
    except zlib.error:  # stored before inputs were compressed
        raw = blob
    inputs = msgspec.msgpack.decode(raw, type=PlanInput)
    if not refs:
        return inputs
    return _set_contents(inputs, {ref[:4]: (bodies or {})[ref[4]] for ref in refs})


def _set_contents(inputs: PlanInput, contents: dict[tuple[int, int, int, int], str]) -> PlanInput:
    """``inputs`` with the content of the conversation messages at (turn, atom, form, message)
    replaced."""
    if not contents:
        return inputs
    replace = msgspec.structs.replace
    items = {REQUIRED: list(inputs.required), CANDIDATE: list(inputs.candidates)}
    for (t, a, _, _), text in contents.items():
        if t in items:
            items[t][a] = replace(items[t][a], text=text)
    inputs = replace(inputs, required=tuple(items[REQUIRED]), candidates=tuple(items[CANDIDATE]))
    contents = {k: v for k, v in contents.items() if k[0] not in items}
    turns = list(inputs.conversation.turns)
    by_atom: dict[tuple[int, int], list[tuple[int, int, str]]] = {}
    for (t, a, f, k), text in contents.items():
        by_atom.setdefault((t, a), []).append((f, k, text))
    for (t, a), entries in sorted(by_atom.items()):
        atoms = list(turns[t].atoms)
        forms = [list(atoms[a].messages), list(atoms[a].masked_messages)]
        for f, k, text in entries:
            forms[f][k] = replace(forms[f][k], content=text)
        atoms[a] = replace(atoms[a], messages=tuple(forms[0]), masked_messages=tuple(forms[1]))
        turns[t] = replace(turns[t], atoms=tuple(atoms))
    return replace(inputs, conversation=replace(inputs.conversation, turns=tuple(turns)))


def _keep_ratios(memo: dict, model: str, ordered: list[float]) -> list[float]:
    """A model's ratios in report order, kept sorted (``usage_stats``) and its latest window."""
    memo["recent", model] = collections.deque(ordered[-calibration.WINDOW :], maxlen=calibration.WINDOW)
    ratios = memo["ratios", model] = sorted(ordered)
    return ratios


def _text_ratio(raw_estimate: int, actual: int, media: int) -> float:
    """A report's ratio for the text it held: the provider's count less the images and documents
    (counted its way, in both), over our raw count of the text."""
    return max(0, actual - media) / raw_estimate
