"""The planner: a pure function from PlanInput to a ContextPlan (the rules: docs/budget.md).

Selection order: required → pins → conversation → retrieval. No I/O, no clocks, no globals:
identical inputs give an identical plan, byte for byte, with the same plan id.

One module on purpose (~790 lines): it reads top to bottom in the order the rules apply, and
every step shares the ledger of what was chosen and why; split, the order would be scattered.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import msgspec

from ctx_lsp.core.budget import allocate
from ctx_lsp.core.items import (
    SECTIONS,
    SYMBOL_BODY,
    SYMBOL_CARD,
    TOOL_EPISODE,
    TOUCHPOINT,
    ContextOverflow,
    ContextPlan,
    Item,
    PinnedItem,
    PinSpec,
    PlanEstimator,
    PlanInput,
    PlanItem,
    Section,
    SectionUsage,
    Totals,
    is_thin_card,
)
from ctx_lsp.core.pins import pin_state
from ctx_lsp.core.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING
from ctx_lsp.errors import Invalid

PLANNER_VERSION = "2"
# Version 1 hashed every candidate's text into the plan id. Version 2 names a symbol's card or
# body by its id, a digest of its code, and by its place (path, range, qualname: the body's
# header), so a heavy plan no longer hashes ~900 kB of code a second time (1.8 -> 1.0 ms).
# A plan kept under an earlier version is planned again under that version (``replanned``).
PLANNER_VERSIONS = ("2", "1")
_NAMED_BY_ID = frozenset({SYMBOL_CARD, SYMBOL_BODY})
# Two container messages at most (the system block and the context block), the context block's
# one-line header (render.CONTEXT_HEADER, 16 tokens in cl100k; a test keeps it within this
# allowance) and reply priming.
CONTEXT_HEADER_ALLOWANCE = 20
FRAMING_TOKENS = 2 * MESSAGE_OVERHEAD + CONTEXT_HEADER_ALLOWANCE + REPLY_PRIMING


class InvalidBudget(Invalid, ValueError):
    """The budget arithmetic leaves nothing to plan with."""


@dataclass(frozen=True, slots=True)
class Chosen:
    """One included item, as the renderer needs it."""

    item: Item
    reason: str
    masked: bool = False
    pin: PinSpec | None = None

    @property
    def tokens(self) -> int:
        if self.masked and self.item.masked_tokens is not None:
            return self.item.masked_tokens
        return self.item.tokens


@dataclass(frozen=True, slots=True)
class PlanResult:
    plan: ContextPlan
    chosen: tuple[Chosen, ...]  # included items in plan order
    latest_user_id: str | None


# An exclusion is recorded cheaply and turned into a PlanItem once, when the plan is assembled.
_Excluded = tuple[Item, str, "str | None", "PinSpec | None"]


@dataclass(slots=True)
class _Ledger:
    included: dict[Section, list[Chosen]] = field(default_factory=lambda: {s: [] for s in SECTIONS})
    excluded: dict[Section, list[_Excluded]] = field(default_factory=lambda: {s: [] for s in SECTIONS})

    def used(self, section: Section) -> int:
        return sum(c.tokens for c in self.included[section])

    def exclude(self, item: Item, reason: str, detail: str | None = None, pin: PinSpec | None = None) -> None:
        self.excluded[item.section].append((item, reason, detail, pin))


def plan_id_for(inp: PlanInput, version: str = PLANNER_VERSION) -> str:
    """A digest of every input (see ``PLANNER_VERSION`` for how a symbol's code is in it)."""
    if version != "1":
        replace = msgspec.structs.replace
        named = tuple(replace(c, text="") if c.kind in _NAMED_BY_ID else c for c in inp.candidates)
        inp = replace(inp, candidates=named)
    if inp.in_conversation:
        encoded = msgspec.msgpack.encode(inp)
    else:  # as before the field existed: plans kept then keep their ids
        fields = msgspec.structs.asdict(inp)
        del fields["in_conversation"]
        encoded = msgspec.msgpack.encode(fields)
    digest = hashlib.sha256(version.encode() + encoded).hexdigest()
    return f"plan-{digest[:20]}"


def replanned(inp: PlanInput, plan_id: str) -> PlanResult:
    """The plan ``plan_id`` made again from its inputs, under the planner version that gave it
    that id (the current one; else an earlier one, for a plan kept before an upgrade)."""
    result = plan(inp)
    if result.plan.plan_id != plan_id:
        for version in PLANNER_VERSIONS[1:]:
            if plan_id_for(inp, version) == plan_id:
                return plan(inp, version)
    return result


def plan(inp: PlanInput, version: str = PLANNER_VERSION) -> PlanResult:
    """Select items for one model call under the prompt budget, explaining every decision
    (``version``: whose plan id it gets)."""
    prompt_budget = inp.budget.prompt_budget
    if prompt_budget <= 0:
        raise InvalidBudget(
            f"prompt budget is {prompt_budget} tokens (context length {inp.budget.context_length} − max "
            f"completion {inp.budget.max_completion_tokens} − safety buffer {inp.budget.safety_buffer}); "
            "it must be positive: lower --max-completion-tokens or --safety-buffer"
        )
    available = prompt_budget - FRAMING_TOKENS
    ledger = _Ledger()

    # 1. Required: always, even when over budget (then no plan at all).
    required, latest_user_id = _required(inp)
    required_ids = {c.item.id for c in required}
    required_tokens = sum(c.tokens for c in required)
    for n, c in enumerate(required):  # a pending tool exchange too large to fit shows its results masked
        if required_tokens <= available:
            break
        if c.reason == "required" and c.item.masked_tokens is not None and c.item.masked_tokens < c.item.tokens:
            required[n] = Chosen(c.item, c.reason, masked=True)
            required_tokens -= c.item.tokens - c.item.masked_tokens
    if required_tokens > available:
        largest = sorted(((c.item.title, c.tokens) for c in required), key=lambda t: -t[1])
        raise ContextOverflow(required_tokens + FRAMING_TOKENS, prompt_budget, largest)
    for c in required:
        ledger.included[c.item.section].append(c)

    # 2. Pins: TTL policy first, then sticky before others, priority, newest.
    room = available - required_tokens
    pinned = _select_pins(inp.pins, room, required_ids, ledger)

    # 3–4. Section budgets from shares, floors (required + pins) and demand.
    eligible_rag = _screen_candidates(inp, pinned, ledger)
    floors = {s: ledger.used(s) for s in SECTIONS}
    demands = {
        "system": floors["system"] + sum(i.tokens for i in inp.scaffold if not i.stale),
        "conversation": floors["conversation"] + _conversation_demand(inp, required_ids),
        "rag": floors["rag"] + sum(i.tokens for i in eligible_rag),
    }
    fixed = {"rag": inp.budget.rag_budget} if inp.budget.rag_budget is not None else None
    budgets = allocate(available, floors, demands, inp.budget.shares, fixed)

    base = {s: list(ledger.included[s]) for s in SECTIONS}
    scaffold_cap, rag_cap = _allowances(inp)
    fills = {
        "system": lambda b: _within(_fill_scaffold, inp.scaffold, b - floors["system"], scaffold_cap, inp),
        "conversation": lambda b: _fill_conversation(inp, required_ids, b - floors["conversation"]),
        "rag": lambda b: _within(
            lambda items, room: _fill_rag(items, room, inp.mode), eligible_rag, b - floors["rag"], rag_cap, inp
        ),
    }
    results = _fill_sections(fills, budgets, floors, set(fixed or ()))

    for s in SECTIONS:
        chosen, excluded, _ = results[s]
        ledger.included[s] = base[s] + chosen
        ledger.excluded[s].extend(excluded)

    return _assemble(inp, ledger, budgets, prompt_budget, latest_user_id, version)


def _fill_sections(fills, budgets: dict[Section, int], floors: dict[Section, int], fixed: set[Section]):
    """Fill each section within its budget. Unused share flows to sections that still have
    demand: a section with slack and nothing excluded for budget lends its slack, in selection
    order first (so retrieval, filled last, takes what the others left in one pass), then back
    to earlier sections. ``budgets`` is updated so that each section's budget covers its use and
    the total never grows."""
    results: dict[Section, _Fill] = {}

    def used(s: Section, fill: _Fill) -> int:
        return floors[s] + sum(c.tokens for c in fill[0])

    def donors(besides: Section) -> list[Section]:
        return [d for d in reversed(SECTIONS) if d in results and d != besides and not results[d][2] and d not in fixed]

    def accept(s: Section, fill: _Fill) -> None:
        results[s] = fill
        extra = used(s, fill) - budgets[s]
        if extra <= 0:
            return
        budgets[s] += extra
        for d in donors(s):  # borrow from the donors' slack, the latest section first
            lent = min(extra, budgets[d] - used(d, results[d]))
            budgets[d] -= lent
            extra -= lent

    for s in SECTIONS:
        pool = 0 if s in fixed else sum(budgets[d] - used(d, results[d]) for d in donors(s))
        accept(s, fills[s](budgets[s] + pool))
    for s in SECTIONS:
        if s in fixed or not results[s][2]:
            continue
        pool = sum(budgets[d] - used(d, results[d]) for d in donors(s))
        if pool > 0:
            retry = fills[s](budgets[s] + pool)
            if used(s, retry) > used(s, results[s]):
                accept(s, retry)
    return results


# ---- selection steps -----------------------------------------------------------------------


def _required(inp: PlanInput) -> tuple[list[Chosen], str | None]:
    chosen = [Chosen(item, "required") for item in inp.required]
    latest_user_id = None
    for turn in reversed(inp.conversation.turns):
        user_atoms = [a for a in turn.atoms if a.messages and a.messages[0].role == "user"]
        if user_atoms:
            latest_user_id = user_atoms[-1].id
            break
    for turn in inp.conversation.turns:
        for atom in turn.atoms:
            if atom.id == latest_user_id:
                chosen.append(Chosen(atom, "latest_user"))
            elif atom.pending:
                chosen.append(Chosen(atom, "required"))
    return chosen, latest_user_id


def _pin_state(pin: PinSpec) -> str:
    """live, grace (``ask`` policy: one more turn, the user is asked) or expired."""
    return pin_state(pin.policy, pin.ttl_remaining)


def _pin_detail(pin: PinSpec, state: str) -> str:
    ttl = "no ttl" if pin.ttl_remaining is None or pin.policy == "unlimited" else f"ttl {pin.ttl_remaining}"
    text = f"{pin.kind} pin · {ttl} · priority {pin.priority}"
    if state == "grace":
        text += " · TTL ran out: kept one more turn, re-pin or drop"
    return text


def _select_pins(pins: tuple[PinnedItem, ...], room: int, required_ids: set[str], ledger: _Ledger) -> list[Chosen]:
    live: list[tuple[PinnedItem, str]] = []
    # pins are charged to the system section, whatever their item is
    pins = tuple(PinnedItem(p.pin, msgspec.structs.replace(p.item, section="system")) for p in pins)
    for p in pins:
        state = _pin_state(p.pin)
        if state == "expired":
            ledger.exclude(p.item, "ttl_expired", _pin_detail(p.pin, state), p.pin)
        else:
            live.append((p, state))
    live.sort(key=lambda ps: (ps[0].pin.kind != "sticky", -ps[0].pin.priority, -ps[0].pin.seq, ps[0].pin.pin_id))
    chosen: list[Chosen] = []
    seen = set(required_ids)
    for p, state in live:
        if p.item.id in seen:
            ledger.exclude(p.item, "duplicate", "already in the prompt", p.pin)
            continue
        if p.item.stale:
            ledger.exclude(p.item, "stale", "the code changed since this summary was made", p.pin)
            continue
        if p.item.tokens > room:
            ledger.exclude(p.item, "budget", _pin_detail(p.pin, state) + " · did not fit", p.pin)
            continue
        room -= p.item.tokens
        seen.add(p.item.id)
        c = Chosen(p.item, "pinned", pin=p.pin)
        chosen.append(c)
        ledger.included[p.item.section].append(c)
    return chosen


def _best_first(items: tuple[Item, ...]) -> list[Item]:
    """Highest score first; ties by fewer tokens, then id. Stable sorts on single C-level keys
    are ~2x faster than one sort on a Python-built tuple key (this runs on every request)."""
    ordered = sorted(items, key=attrgetter("id"))
    ordered.sort(key=attrgetter("tokens"))
    if all(i.score is not None for i in ordered):
        ordered.sort(key=attrgetter("score"), reverse=True)
    else:
        ordered.sort(key=lambda i: i.score or 0.0, reverse=True)
    return ordered


class _Coverage:
    """What the included pins cover, indexed so each candidate is checked in O(depth)."""

    def __init__(self, pinned: list[Chosen]) -> None:
        self.ids: dict[str, str] = {}
        self.symbols: dict[str, str] = {}
        self.whole_files: dict[str, str] = {}
        self.ranges: dict[str, list[tuple[int, int, str]]] = {}
        for c in pinned:
            pin_id = c.pin.pin_id if c.pin else ""
            item = c.item
            self.ids[item.id] = pin_id
            if item.symbol:
                self.symbols[item.symbol] = pin_id
            if item.path:
                if item.range is not None:
                    self.ranges.setdefault(item.path, []).append((item.range.start.line, item.range.end.line, pin_id))
                elif item.symbol is None:
                    self.whole_files[item.path] = pin_id
        # a pinned symbol or what it encloses: one C-level test turns away most candidates
        self.enclosing = tuple(f"{name}." for name in self.symbols)

    def pin_covering(self, item: Item) -> str | None:
        """The id of a pin that already covers ``item`` (same item, the symbol or an enclosing
        one, the whole file, or a range containing it), else None."""
        hit = self.ids.get(item.id)
        if hit is not None:
            return hit
        if item.symbol and (item.symbol in self.symbols or item.symbol.startswith(self.enclosing)):
            name = item.symbol
            while True:
                hit = self.symbols.get(name)
                if hit is not None:
                    return hit
                dot = name.rfind(".")
                if dot < 0:
                    break
                name = name[:dot]
        if item.path:
            hit = self.whole_files.get(item.path)
            if hit is not None:
                return hit
            if item.range is not None:
                for start, end, pin_id in self.ranges.get(item.path, ()):
                    if start <= item.range.start.line and item.range.end.line <= end:
                        return pin_id
        return None


def _screen_candidates(inp: PlanInput, pinned: list[Chosen], ledger: _Ledger) -> list[Item]:
    """Retrieval candidates that may compete for the rag budget, best first; the rest are
    excluded here with their reason (mode_off, stale, duplicate, in_conversation)."""
    ordered = _best_first(inp.candidates)
    if inp.mode == "off":
        for item in ordered:
            ledger.exclude(item, "mode_off", "mode is off: no automatic retrieval")
        return []
    coverage = _Coverage(pinned)
    by_id = coverage.ids
    present = frozenset(inp.in_conversation)
    deep = bool(coverage.symbols or coverage.whole_files or coverage.ranges)
    eligible: list[Item] = []
    seen_ids: set[str] = set()
    # the hot loop of a plan (every candidate passes here once): checks kept flat and cheap
    for item in ordered:
        iid = item.id
        if item.stale:
            ledger.exclude(item, "stale", "the code changed since this summary was made")
        elif iid in seen_ids:
            ledger.exclude(item, "duplicate", "listed twice by retrieval")
        elif iid in present:
            ledger.exclude(item, "in_conversation", "its code is in the conversation already")
        else:
            pin_id = by_id.get(iid)
            if pin_id is None and deep:
                pin_id = coverage.pin_covering(item)
            if pin_id is not None:
                ledger.exclude(item, "duplicate", f"covered by pin {pin_id}")
            else:
                eligible.append(item)
                seen_ids.add(iid)
    return eligible


_Fill = tuple[list[Chosen], list[_Excluded], bool]  # included, excluded, any excluded for budget


def _allowances(inp: PlanInput) -> tuple[int | None, int | None]:
    """How ``inp.allowance`` splits between the scaffold (first: it is the stable part of the
    prompt) and retrieved items (what the scaffold leaves)."""
    if inp.allowance is None:
        return None, None
    left = inp.allowance
    for item in sorted(inp.scaffold, key=lambda i: (-i.priority, i.id)):
        if not item.stale and item.tokens <= left:
            left -= item.tokens
    return inp.allowance, left


def _within(fill: Callable[[Any, int], _Fill], items: Any, room: int, cap: int | None, inp: PlanInput) -> _Fill:
    """A section's automatic items filled in ``room``, or in ``cap`` when that is smaller: then
    what did not fit was kept out by what it costs, not by the budget — and says so."""
    if cap is None or cap >= room:
        return fill(items, room)
    chosen, excluded, _ = fill(items, max(0, cap))
    detail = (
        f"automatic context is paid from what the gateway saved in this conversation "
        f"({inp.allowance:,} tokens so far; gateway.context_cost)"
    )
    relabelled = [(i, "cost", detail, pin) if why == "budget" else (i, why, d, pin) for i, why, d, pin in excluded]
    return chosen, relabelled, False  # more room would not help: it borrows none


def _fill_scaffold(scaffold: tuple[Item, ...], room: int) -> _Fill:
    chosen: list[Chosen] = []
    excluded: list[_Excluded] = []
    for item in sorted(scaffold, key=lambda i: (-i.priority, i.id)):
        if item.stale:  # a capsule whose module changed since it was made
            excluded.append((item, "stale", "the code changed since this summary was made", None))
        elif item.tokens <= room:
            chosen.append(Chosen(item, "scaffold"))
            room -= item.tokens
        else:
            excluded.append((item, "budget", None, None))
    return chosen, excluded, any(e[1] == "budget" for e in excluded)


# How retrieval packs the rag room (docs/retrieval.md), per mode: "breadth from cards, depth
# from bodies", the same split in light and heavy mode (measured on real tasks,
# benchmarks/retrieval/RESULTS.md). Depth: the best hits' bodies, within DEPTH_SHARE of the room
# but leaving at least BREADTH_RESERVE tokens for cards (so that, in a small room, the files the
# lexical ranking finds past the first few hits still get a card; since the spread pass shows
# more files with the same cards, 600 tokens, the 30% of a 2k room, where it was 1,000: more
# code at 2k for as many files, see ``_RagPack.spread``); one body may take at most
# DEPTH_ITEM_SHARE of the room. Light mode caps a body at half the room, heavy mode lets one long
# body (a class shown whole) fill the whole depth share. The best hit's body is the exception in
# both modes: it may fill the whole depth share, past the reserve (a 1,031-token function that
# a bug report is about, in a 2k room, went in as its card while the second hit's body took its
# place; the reserve is for the hits after it). A body that does not fit in depth is still
# offered as its card in the breadth pass, best first, so the best hit is never left out.
DEPTH_SHARE = {"light": 0.7, "heavy": 0.7}
BREADTH_RESERVE = {"light": 600, "heavy": 600}
DEPTH_ITEM_SHARE = {"light": 0.5, "heavy": 1.0}
# A card of a short symbol is nearly its whole code (a 13-line method's card is 100 tokens, its
# body 140): where the body costs at most NEAR_BODY_RATIO times the card and NEAR_BODY_EXTRA
# tokens more, breadth offers the body instead — the code, for a few tokens more.
NEAR_BODY_RATIO = 1.5
NEAR_BODY_EXTRA = 40
# Items that show code: a range of a file (bodies, excerpts) that another item need not repeat.
CODE_KINDS = frozenset({SYMBOL_BODY, TOUCHPOINT})
# A small room where retrieval offered thin cards (a request that points at code: a traceback,
# an error message): each card goes in thin, a third of its tokens, and what that saves goes to
# depth, the code the request points at (docs/retrieval.md: "a request that points at code").
THIN_ROOM = 4_000
THIN_DEPTH_SHARE = 0.82
THIN_BREADTH_RESERVE = 350


def _fill_rag(eligible: list[Item], room: int, mode: str) -> _Fill:
    """Pack retrieved items, best first, in five passes:

    1. depth: the bodies of the best hits (see DEPTH_SHARE);
    2. breadth: every other form (cards, touchpoints, history), while it fits — a card that is
       nearly its body as that body (see NEAR_BODY_RATIO);
    3. upgrades: bodies of what is in as a card, then any body that still fits, best first;
    4. spread: the best card of each file not shown yet, in place of the lowest-ranked card of a
       file shown by two items or more (``_RagPack.spread``);
    5. the room the spread freed: any item that fits, best first (a body in place of its card
       too), but not a card that gave way.

    A symbol is packed in one form only, and no item is packed inside another: an item whose
    range lies inside an included body is a ``duplicate``; a body that contains included items
    replaces them when it fits in the room they free (its detail names them)."""
    eligible, thinned, whole = _cards_for_room(eligible, room)
    pack = _RagPack(room)
    if whole:
        share = room * THIN_DEPTH_SHARE
        depth_left = min(share, room - THIN_BREADTH_RESERVE)
    else:
        share = room * DEPTH_SHARE.get(mode, 1.0)
        depth_left = min(share, room - BREADTH_RESERVE.get(mode, 0))
    largest = room * DEPTH_ITEM_SHARE.get(mode, 1.0)
    bodies = [i for i in eligible if i.kind == SYMBOL_BODY]
    for n, item in enumerate(bodies):  # 1. depth; the best hit's body up to the whole depth share
        if depth_left <= 0:
            break
        depth_left -= pack.add(item, min(share, pack.room) if n == 0 else min(depth_left, pack.room, largest)) or 0
    body_of = {i.symbol: i for i in bodies if i.symbol}
    for item in eligible:  # 2. breadth
        if pack.room <= 0:
            break
        if item.kind != SYMBOL_BODY:
            body = body_of.get(item.symbol) if item.symbol else None
            card = whole.get(item.symbol, item) if item.symbol else item  # a thin card: judged as its whole one
            if body is None or not _near(card, body) or not pack.add(body, pack.room):
                pack.add(item, pack.room)
    for item in bodies:  # 3. upgrades, then leftover room
        if pack.room <= 0:
            break
        pack.add(item, pack.room)
    pack.spread(eligible)  # 4. a card of each file not shown yet, in place of a shown file's last card
    for item in eligible:  # 5. the room the spread freed (a card gave way to a smaller one), best first
        if pack.room <= 0:
            break
        if item.id not in pack.gave_way:
            pack.add(item, pack.room)
    chosen, excluded, over = pack.result(eligible)
    return chosen, excluded + thinned, over


def _cards_for_room(eligible: list[Item], room: int) -> tuple[list[Item], list[_Excluded], dict[str, Item]]:
    """The items a room packs where retrieval offered thin cards: in a small room (THIN_ROOM),
    each symbol's thin card in place of its whole card (excluded, returned by symbol too); in
    a bigger one, whole cards, and the thin ones are not listed (they are another form of the
    same card, offered for a small room only)."""
    if not any(is_thin_card(i) for i in eligible):
        return eligible, [], {}
    if room > THIN_ROOM:
        return [i for i in eligible if not is_thin_card(i)], [], {}
    thin = {i.symbol for i in eligible if is_thin_card(i)}
    kept: list[Item] = []
    excluded: list[_Excluded] = []
    whole: dict[str, Item] = {}
    detail = f"cards are thin in a room of {room} tokens: its signature is offered"
    for item in eligible:
        if item.kind == SYMBOL_CARD and item.symbol in thin and not is_thin_card(item):
            whole[item.symbol] = item
            excluded.append((item, "duplicate", detail, None))
        else:
            kept.append(item)
    return kept, excluded, whole


def _near(card: Item, body: Item) -> bool:
    return body.tokens <= card.tokens * NEAR_BODY_RATIO and body.tokens - card.tokens <= NEAR_BODY_EXTRA


def select_retrieved(
    candidates: tuple[Item, ...], budget: int, mode: str = "heavy"
) -> tuple[list[Item], list[tuple[Item, str]]]:
    """Retrieval alone under a token budget (an agent's search): the rag section's rules with no
    other section — best first, whole items, one form of a symbol — in ``budget`` tokens. Returns
    the included items in that order, and the excluded ones with their reason (``budget`` or
    ``duplicate``)."""
    eligible: list[Item] = []
    seen: set[str] = set()
    twice: list[tuple[Item, str]] = []
    for item in _best_first(candidates):
        if item.id in seen:
            twice.append((item, "duplicate"))
        else:
            eligible.append(item)
            seen.add(item.id)
    chosen, excluded, _ = _fill_rag(eligible, budget, mode)
    return [c.item for c in chosen], [(e[0], e[1]) for e in excluded] + twice


class _RagPack:
    """The rag items chosen so far: what each symbol is in as, and the code ranges per file."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.chosen: dict[str, Item] = {}  # id → the item as included (its why may say what it replaced)
        self.symbols: dict[str, str] = {}  # symbol → id of its included form
        self.code: dict[str, list[Item]] = {}  # path → included code items
        self.in_file: dict[str, list[Item]] = {}  # path → included items
        self.file_tokens: dict[str, int] = {}  # path → tokens of its included items
        self.inside_of: dict[str, str] = {}  # id → title of the included item it lies inside
        self.gave_way: dict[str, str] = {}  # id → title of the card of another file that took its room

    def _container(self, item: Item) -> Item | None:
        """An included code item whose range holds ``item``'s."""
        r = item.range
        if r is None or not item.path:
            return None
        a, b = r.start.line, r.end.line
        for other in self.code.get(item.path, ()):
            o = other.range
            if o is not None and o.start.line <= a and b <= o.end.line and other.id != item.id:
                return other
        return None

    def _parts(self, item: Item) -> list[Item]:
        """Included items (of any kind) inside ``item``'s range, when ``item`` shows code."""
        r = item.range
        if r is None or not item.path or item.kind not in CODE_KINDS:
            return []
        a, b = r.start.line, r.end.line
        return [
            c
            for c in self.in_file.get(item.path, ())
            if c.range is not None and a <= c.range.start.line and c.range.end.line <= b
        ]

    def add(self, item: Item, limit: int) -> int | None:
        """Include ``item`` if it costs at most ``limit`` tokens (its own, less any included
        form of its symbol and items inside it, which it replaces); returns what it cost."""
        if item.id in self.chosen:
            return None
        form = self.symbols.get(item.symbol) if item.symbol else None
        if form is not None and (item.kind != SYMBOL_BODY or self.chosen[form].kind == SYMBOL_BODY):
            return None  # in already; only a card may give way to its body
        # what it could replace is in its file: a bound that turns most misses away before the
        # scans below (late in a pack, with little room, nearly every item is a miss)
        freed = self.file_tokens.get(item.path, 0) if item.path and item.kind in CODE_KINDS else 0
        if item.tokens - freed > limit:
            return None
        if self._container(item) is not None:
            return None
        parts = self._parts(item)
        if form is not None and all(p.id != form for p in parts):
            parts.append(self.chosen[form])
        cost = item.tokens - sum(p.tokens for p in parts)
        if cost > limit:
            return None
        for p in parts:
            self._remove(p, item.title)
        if parts:
            names = ", ".join(p.title for p in parts[:3]) + (f" (+{len(parts) - 3})" if len(parts) > 3 else "")
            note = f"replaces {names}: shown once, inside it"
            item = msgspec.structs.replace(item, why=f"{item.why}; {note}" if item.why else note)
        self.chosen[item.id] = item
        self.inside_of.pop(item.id, None)
        if item.symbol:
            self.symbols[item.symbol] = item.id
        if item.path:
            self.in_file.setdefault(item.path, []).append(item)
            self.file_tokens[item.path] = self.file_tokens.get(item.path, 0) + item.tokens
            if item.kind in CODE_KINDS:
                self.code.setdefault(item.path, []).append(item)
        self.room -= cost
        return cost

    def _remove(self, item: Item, container: str | None) -> None:
        """Take ``item`` out: it lies inside ``container`` (the title of what replaces it), or,
        given no container, it gave its room back."""
        del self.chosen[item.id]
        if item.symbol and self.symbols.get(item.symbol) == item.id:
            del self.symbols[item.symbol]
        if item.path:
            self.in_file[item.path] = [c for c in self.in_file[item.path] if c.id != item.id]
            self.file_tokens[item.path] -= item.tokens
            self.code[item.path] = [c for c in self.code.get(item.path, ()) if c.id != item.id]
        if container is not None:
            self.inside_of[item.id] = container
        else:
            self.room += item.tokens

    def spread(self, eligible: list[Item]) -> None:
        """Files before a file's last cards: the best card of each file not shown yet, best
        first, takes the place of the lowest-ranked card of a file that keeps another item (one
        for one, when the room that card frees is enough). In a small room the cards of the first
        few files fill it; a second or third card of one file says less than the first one of
        another, which may be the file the fix is in. Bodies never give way: they carry the
        code, and the card of the best hit whose body did not fit stays. (A card here is any
        form but a body, as the breadth pass packs them.)"""
        shown = set(self.in_file)
        fresh: list[Item] = []
        for item in eligible:
            if item.kind == SYMBOL_BODY or not item.path or item.path in shown:
                continue
            if item.symbol and item.symbol in self.symbols:
                continue
            shown.add(item.path)
            fresh.append(item)
        if not fresh:
            return
        # the included cards, lowest-ranked first; never the card of the best hit whose body did not
        # fit (it gave way to a far worse file's while two lesser bodies of its file stayed in). A
        # module's card has no body: its file is shown by the items it keeps.
        best = eligible[0].symbol if eligible else None
        if best is not None and not any(i.kind == SYMBOL_BODY and i.symbol == best for i in eligible):
            best = None
        cards = [
            self.chosen[i.id]
            for i in reversed(eligible)
            if i.id in self.chosen and i.kind != SYMBOL_BODY and (best is None or i.symbol != best)
        ]
        for item in fresh:
            for n, card in enumerate(cards):
                if card.tokens + self.room < item.tokens or len(self.in_file.get(card.path or "", ())) < 2:
                    continue
                self._remove(card, None)
                if self.add(item, self.room) is None:  # it did not fit after all: put the card back
                    self.add(card, self.room)
                    break
                self.gave_way[card.id] = item.title
                del cards[n]
                break

    def result(self, eligible: list[Item]) -> _Fill:
        chosen = [Chosen(self.chosen[i.id], "relevant") for i in eligible if i.id in self.chosen]
        excluded: list[_Excluded] = []
        for i in eligible:
            if i.id in self.chosen:
                continue
            form = self.symbols.get(i.symbol) if i.symbol else None
            if i.id in self.inside_of:
                excluded.append((i, "duplicate", f"inside {self.inside_of[i.id]}, included instead", None))
            elif i.id in self.gave_way:
                detail = f"gave its room to {self.gave_way[i.id]}: a file not shown yet before another card of this one"
                excluded.append((i, "budget", detail, None))
            elif form is not None and i.kind == SYMBOL_BODY and self.chosen[form].kind != SYMBOL_BODY:
                excluded.append((i, "budget", "its card is included: the body did not fit", None))
            elif form is not None:
                excluded.append((i, "duplicate", "another form of this symbol is included", None))
            elif (container := self._container(i)) is not None:
                excluded.append((i, "duplicate", f"inside {container.title}, already included", None))
            else:
                excluded.append((i, "budget", None, None))
        return chosen, excluded, any(e[1] == "budget" for e in excluded)


def _conversation_demand(inp: PlanInput, required_ids: set[str]) -> int:
    total = inp.conversation.summary.tokens if inp.conversation.summary else 0
    for turn in inp.conversation.turns:
        total += sum(a.tokens for a in turn.atoms if a.id not in required_ids)
    return total


def _masked_cost(atom: Item) -> int:
    return atom.masked_tokens if atom.masked_tokens is not None else atom.tokens


def _fill_conversation(inp: PlanInput, required_ids: set[str], room: int) -> _Fill:
    """Summary first, then the current turn (masking, then dropping, its oldest tool exchanges),
    then older turns newest first, kept or dropped whole; the first older turn that does not
    fit ends the window (a conversation with holes would mislead the model)."""
    conv = inp.conversation
    chosen: list[Chosen] = []
    excluded: list[_Excluded] = []
    if conv.summary is not None:
        if conv.summary.tokens <= room:
            chosen.append(Chosen(conv.summary, "summary"))
            room -= conv.summary.tokens
        else:
            excluded.append((conv.summary, "budget", None, None))
    if not conv.turns:
        return chosen, excluded, any(e[1] == "budget" for e in excluded)

    current = [a for a in conv.turns[-1].atoms if a.id not in required_ids]
    masked = [False] * len(current)
    dropped = [False] * len(current)

    def cost() -> int:
        return sum(0 if dropped[i] else (_masked_cost(a) if masked[i] else a.tokens) for i, a in enumerate(current))

    while cost() > room:
        i = next(
            (
                k
                for k, a in enumerate(current)
                if not masked[k] and not dropped[k] and a.masked_tokens is not None and a.masked_tokens < a.tokens
            ),
            None,
        )
        if i is not None:
            masked[i] = True
            continue
        i = next(k for k, _ in enumerate(current) if not dropped[k])
        dropped[i] = True
    current_chosen: list[Chosen] = []
    for k, atom in enumerate(current):
        if dropped[k]:
            excluded.append((atom, "budget", "oldest exchanges of the current turn give way first", None))
        else:
            current_chosen.append(Chosen(atom, "recent", masked=masked[k]))
    room -= cost()

    older: list[list[Chosen]] = []
    window_closed = bool(any(dropped))
    for turn in reversed(conv.turns[:-1]):
        atoms = [a for a in turn.atoms if a.id not in required_ids]
        full = sum(a.tokens for a in atoms)
        thin = sum(_masked_cost(a) for a in atoms)
        if not window_closed and full <= room:
            older.append([Chosen(a, "recent") for a in atoms])
            room -= full
        elif not window_closed and thin <= room:
            older.append([Chosen(a, "recent", masked=a.masked_tokens is not None) for a in atoms])
            room -= thin
        else:
            window_closed = True
            excluded.extend((a, "budget", "older turn outside the window", None) for a in atoms)
    for turn_chosen in reversed(older):
        chosen.extend(turn_chosen)
    chosen.extend(current_chosen)
    return chosen, excluded, any(e[1] == "budget" for e in excluded)


# ---- output ----------------------------------------------------------------------------------


def _plan_item(
    item: Item,
    reason: str,
    detail: str | None = None,
    pin: PinSpec | None = None,
    tokens: int | None = None,
) -> PlanItem:
    # positional: this runs once per excluded candidate, thousands of times per plan
    return PlanItem(
        item.id,
        item.section,
        item.kind,
        item.title,
        item.path,
        item.range,
        item.symbol,
        item.tokens if tokens is None else tokens,
        item.priority,
        item.score,
        reason,
        _detail(detail if detail is not None else item.why, item.detail),
        pin.pin_id if pin else None,
        item.id if item.section == "conversation" and item.messages else None,
    )


def _detail(note: str | None, own: str | None) -> str | None:
    """What a plan item says about itself: its own detail (e.g. what was masked in its text),
    then the note on its selection (why it scored, its pin, why it was left out)."""
    if not own or own == note:
        return note
    return f"{own} · {note}" if note else own


def _chosen_item(c: Chosen) -> PlanItem:
    detail = c.item.why
    if c.pin is not None:
        detail = _pin_detail(c.pin, _pin_state(c.pin))
    if c.masked:
        what = "tool results" if c.item.kind == TOOL_EPISODE else "large messages"
        detail = f"{what} masked to a stub ({c.item.tokens} → {c.tokens} tok)"
    return _plan_item(c.item, c.reason, detail=detail, pin=c.pin, tokens=c.tokens)


def _assemble(
    inp: PlanInput,
    ledger: _Ledger,
    budgets: dict[Section, int],
    prompt_budget: int,
    latest_user_id: str | None,
    version: str,
) -> PlanResult:
    # conversation in chronological order, the summary first
    position = {atom.id: n for n, atom in enumerate(a for turn in inp.conversation.turns for a in turn.atoms)}
    ledger.included["conversation"].sort(key=lambda c: (c.reason != "summary", position.get(c.item.id, -1)))
    chosen = [c for s in SECTIONS for c in ledger.included[s]]
    included = tuple(_chosen_item(c) for c in chosen)
    excluded = tuple(_plan_item(*e) for s in SECTIONS for e in ledger.excluded[s])
    sections = tuple(
        SectionUsage(
            name=s,
            budget=budgets[s],
            used=ledger.used(s),
            count=len(ledger.included[s]),
            excluded=len(ledger.excluded[s]),
        )
        for s in SECTIONS
    )
    item_tokens = sum(c.tokens for c in chosen)
    plan_ = ContextPlan(
        plan_id=plan_id_for(inp, version),
        model=inp.model,
        mode=inp.mode,
        context_length=inp.budget.context_length,
        max_completion_tokens=inp.budget.max_completion_tokens,
        safety_buffer=inp.budget.safety_buffer,
        prompt_budget=prompt_budget,
        sections=sections,
        included=included,
        excluded=excluded,
        totals=Totals(
            tokens=item_tokens + FRAMING_TOKENS,
            items=len(included),
            excluded=len(excluded),
            framing=FRAMING_TOKENS,
        ),
        estimator=PlanEstimator(
            encoding=inp.estimator.encoding,
            exact=inp.estimator.exact,
            calibration=inp.estimator.calibration,
            spread=inp.estimator.spread,
            reports=inp.estimator.reports,
        ),
        retrieval_set_id=inp.retrieval_set_id,
        cluster_id=inp.cluster_id,
        notes=inp.notes,
    )
    return PlanResult(plan=plan_, chosen=tuple(chosen), latest_user_id=latest_user_id)
