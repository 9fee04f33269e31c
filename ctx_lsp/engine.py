"""The engine: composes the pure core with the workspace index — one workspace's configuration,
index, model registry and plan inputs. ``ctx_lsp.sessions`` adds the memory store on top of it
for the language server; the CLI and the server call these, neither holds business logic.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from ctx_lsp.config import CtxConfig, ModelOverride, load_workspace_config
from ctx_lsp.core.budget import ClientPrompt, client_shares
from ctx_lsp.core.conversation import Sized, build_turns, mask_limit, with_query
from ctx_lsp.core.harness import user_words
from ctx_lsp.core.ids import content_digest, content_id
from ctx_lsp.core.items import (
    COMPACTION_SUMMARY,
    FOCUS_HINT,
    INSTRUCTIONS,
    SYSTEM_PROMPT,
    BudgetSpec,
    Conversation,
    EstimatorInfo,
    Item,
    Message,
    Mode,
    PinnedItem,
    PinSpec,
    PlanInput,
    Section,
    Shares,
)
from ctx_lsp.core.models import PRICES, ModelRegistry, ModelSpec, Prices
from ctx_lsp.core.planner import PlanResult, plan, select_retrieved
from ctx_lsp.core.present import present_ids
from ctx_lsp.core.render import RenderedPrompt, RenderFormat, render
from ctx_lsp.core.tokens import MESSAGE_OVERHEAD, TokenCounter, counter_for, scaled
from ctx_lsp.errors import Invalid
from ctx_lsp.memory import reflection
from ctx_lsp.memory.history import HistoryChunks, history_candidates
from ctx_lsp.workspace import cards, retrieval, signals
from ctx_lsp.workspace.files import PathRefused, read_workspace_text
from ctx_lsp.workspace.index import IndexStats, WorkspaceIndex
from ctx_lsp.workspace.languages import describe, display_names, kind_label, language_of
from ctx_lsp.workspace.secrets import SecretMasker, masked_detail

log = logging.getLogger("ctx_lsp.engine")

DEFAULT_SYSTEM_PROMPT = (
    "You are an AI coding assistant working in the {languages} workspace `{workspace}`. The context "
    "below was selected by ctx_lsp under a token budget: symbol cards show signatures, docstrings "
    "and the first lines; bodies show full code. Ask for what is missing instead of guessing, "
    "and cite code as path:line. When some code seems foundational to the task, list its qualified names or "
    "paths in a fenced ctx-suggest block (one per line) so the user can pin it."
)
SCAFFOLD_MAX_ENTRIES = 40
AGENT_INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md")
MAX_INSTRUCTIONS_BYTES = 256 * 1024  # an instruction file is prose for every request; larger is a mistake
MASKED_CACHE_TEXTS = 256  # texts whose masked form ``mask_text`` remembers
UNKNOWN_MODEL_CALIBRATION = 1.5  # Roo Code's factor for models it cannot count exactly
RAG_QUERY_CHARS = 8_000
RETRIEVALS_KEPT = 32  # candidate lists (hundreds of items each) kept while the index is unchanged
# symbols whose card and body are kept (across saves too), the least recently used going first:
# a new question on sympy finds a third of its symbols made already (by 800 questions, ~45 MB)
ITEMS_KEPT = 20_000
SKIPPED_IN_NOTES = 3  # skipped source files named in a plan's notes


class UserError(Invalid, ValueError):
    """Something the user can fix; its message says what."""


@dataclass(frozen=True, slots=True)
class Focus:
    path: str  # workspace-relative
    line: int | None = None


class BudgetOverrides(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A request's own budget numbers, carried whole from the face to ``Engine.budget``: each
    one unset (None) falls back to the configuration's, else the model's."""

    context_length: int | None = None
    max_completion_tokens: int | None = None
    safety_buffer: int | None = None
    rag_budget: int | None = None  # fixes the rag section's budget (benchmarks)
    # (system, conversation, rag) shares of the prompt budget instead of the configured ones
    shares: tuple[float, float, float] | None = None
    # a prompt the client brings whole (the gateway): the shares and the rag budget are sized
    # around it (``core.budget.client_shares``) instead of ``shares`` and ``rag_budget``
    client: ClientPrompt | None = None


@dataclass(slots=True)
class PlanRequest:
    """A question and how to ask it: what a face fills. The sessions engine fills in the
    session's model and mode when the face leaves them unset, and adds a ``SessionContext``."""

    query: str
    model: str | None = None
    budget: BudgetOverrides = field(default_factory=BudgetOverrides)
    mode: Mode | None = None
    focus: Focus | None = None
    open_files: list[str] = field(default_factory=list)
    pins: list[str] = field(default_factory=list)  # qualified names, pinned sticky for this plan
    system_prompt: str | None = None
    # the conversation already ends with what is asked (the gateway: a request's own messages,
    # maybe ending in tool results): the query is not appended as a new user message
    query_in_conversation: bool = False
    instructions: bool = True  # the workspace's agent instruction files (a client may bring its own)


@dataclass(frozen=True, slots=True)
class SessionContext:
    """What the sessions engine adds to a request from a session's memory (``sessions.planning``):
    its conversation window, compaction summary, archived history, pins, capsules, activation.
    The CLI's ``--conversation`` file is its only part a face gives (a conversation given whole)."""

    extra_pins: list[PinnedItem] = field(default_factory=list)
    conversation: list[Message] = field(default_factory=list)
    # known sizes of conversation messages, by id (from the store); a message whose size says it
    # was not loaded has no text here and is shown as a stub
    sizes: dict[str, Sized] | None = None
    summary: str | None = None  # the latest compaction summary, standing in for archived turns
    capsules: list[Item] = field(default_factory=list)  # orientation capsules (scaffold)
    history: list[list[Message]] = field(default_factory=list)  # archived turns, retrievable
    activation: dict[str, tuple[float, str]] = field(default_factory=dict)  # qualname → (score, detail)
    cluster_id: str | None = None


@dataclass(frozen=True, slots=True)
class ConversationContext:
    """What a face that carries a client's conversation keeps between its requests (the gateway,
    ``sessions.exchanges``): the automatic context as an earlier plan of the conversation had it,
    so the provider's cache keeps hitting, what pays for new context, and what the client has read."""

    # the scaffold and capsules as an earlier plan had them (kept while a conversation lasts: they
    # sit early in its prompt, where a change costs the provider's cache)
    scaffold: list[Item] | None = None
    # what retrieval chose for this turn's question in an earlier plan (an agent loop keeps its
    # turn's context as it was): no new search
    candidates: list[Item] | None = None
    # tokens the automatic context (scaffold, capsules, retrieved items) may take in all: the
    # gateway's savings pay for it (None: only the budget limits it)
    allowance: int | None = None
    # the lines of code already in the conversation (``core.present``): retrieved symbols found
    # there whole are left out as ``in_conversation``
    present: frozenset[str] | None = None


NO_MEMORY = SessionContext()
NOTHING_CARRIED = ConversationContext()


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    spec: ModelSpec
    known: bool
    estimator: EstimatorInfo
    counter: TokenCounter


@dataclass(frozen=True, slots=True)
class CodeSearch:
    """Retrieval on its own within a token budget: the items that fit, best first, whole."""

    query: str
    budget: int
    used: int
    items: list[Item]
    left_out: int  # ranked items that did not fit the budget
    ranked: int  # symbols retrieval ranked for the query


@dataclass(frozen=True, slots=True)
class PlanOutcome:
    result: PlanResult
    inputs: PlanInput
    counter: TokenCounter
    timings_ms: dict[str, float]

    def render(self, fmt: RenderFormat) -> RenderedPrompt:
        return render(self.result, fmt, self.counter, self.inputs.estimator.calibration)


def model_spec(m: ModelOverride) -> ModelSpec:
    """A ``[[models]]`` entry as a registry model; its prices, when it gives the input price, else
    the built-in model's of that name."""
    fields = msgspec.structs.asdict(m)
    price = {k: fields.pop(k) for k in ("input_price", "output_price", "cache_read_price", "cache_write_price")}
    prices = PRICES.get(m.name)
    if price["input_price"] is not None:
        i = price["input_price"]
        prices = Prices(
            input=i,
            output=price["output_price"] if price["output_price"] is not None else i,
            cache_read=price["cache_read_price"] if price["cache_read_price"] is not None else i,
            cache_write=price["cache_write_price"] if price["cache_write_price"] is not None else i,
            as_of="ctx.toml",
        )
    return ModelSpec(**fields, prices=prices)


def text_item(section: Section, kind: str, title: str, text: str, counter: TokenCounter, cal: float) -> Item:
    """An item that shows ``text`` whole, counted with ``counter`` and scaled by ``cal``."""
    return Item(
        id=f"{kind}:{content_id(text)}",
        section=section,
        kind=kind,
        title=title,
        text=text,
        tokens=scaled(counter.count(text) + cards.SEPARATOR_TOKENS, cal),
    )


def _set_parts(candidates: Iterable[Item]) -> Iterator[str]:
    """What a retrieval set id is made of: each candidate's id and score, in order."""
    return (f"{c.id}:{c.score}" for c in candidates)


def _retrieval_set_id(digest: Any) -> str:
    return "rs-" + digest.hexdigest()[:16]


class Engine:
    """One workspace: its configuration, index and model registry."""

    def __init__(self, root: Path, config: CtxConfig | None = None, *, db_path: Path | None = None) -> None:
        self.root = root.resolve()
        if not self.root.is_dir():
            raise UserError(f"workspace {root} is not a directory")
        if config is None:
            config, self.config_messages = load_workspace_config(self.root)
            self.file_config = config
        else:
            self.config_messages = []
            self.file_config = load_workspace_config(self.root)[0]
        # what the workspace's own files say (a cloned repository decides them): the gateway does not
        # send keys to an upstream named only there unless it is a known provider or this machine
        self.apply_config(config)
        store = self.root / config.store_dir
        self.index = WorkspaceIndex(self.root, db_path or store / "index.sqlite3", masker=self.masker)
        self._scaffold_cache: tuple[int, Item] | None = None
        self._languages_cache: tuple[object, str] | None = None
        self._instructions_cache: dict[tuple[str, int, int], str] = {}
        self.instruction_problems: dict[str, str] = {}  # file → why it was left out (a plan note)
        self.skipped_files: list[str] = []  # "rel (reason)" of source files the last refresh left out
        self.history_chunks = HistoryChunks()

    def apply_config(self, config: CtxConfig) -> None:
        """Use new settings from now on (the store location is fixed at start-up). When they
        mask secrets differently, the index is rebuilt before this returns: no text masked
        the old way stays in use."""
        self.config = config
        self.registry = ModelRegistry([model_spec(m) for m in config.models])  # user overrides win
        self._scaffold_cache = None
        self._instructions_cache = {}  # masked text: masked anew with the new settings
        self._masked: dict[tuple[bool, str], str] = {}
        self.masker = (
            SecretMasker(config.secret_detectors_off, config.secret_allowlist) if config.mask_secrets else None
        )
        index = getattr(self, "index", None)
        if index is not None and index.set_masker(self.masker):
            self.refresh_index()

    def mask_text(self, text: str, name: str = "file.md") -> str:
        """``text`` from the workspace with its secrets masked (as configured): for what does
        not go through the index (agent instructions, capsules, a module sent to a
        summariser). Masked text comes back unchanged, so masking twice is harmless."""
        if self.masker is None:
            return text
        key = (language_of(name) is not None, text)
        cached = self._masked.get(key)
        if cached is None:
            if len(self._masked) >= MASKED_CACHE_TEXTS:
                self._masked.clear()
            cached = self._masked[key] = self.masker.mask(text, name).text
        return cached

    def close(self) -> None:
        self.index.close()

    # ---- index -----------------------------------------------------------------------------

    def refresh_index(self, progress=None, *, apart: bool = False) -> IndexStats:
        """``WorkspaceIndex.refresh`` (``apart``: a large one in a process of its own)."""
        stats = self.index.refresh(progress, apart=apart)
        self._scaffold_cache = None
        self.skipped_files = list(stats.skipped)  # (a Python syntax error keeps its last symbols: not skipped)
        return stats

    def warm(self) -> None:
        """What every first plan builds, built before one is asked for: the workspace's scaffold
        (~11 ms on sympy, which thirty conversations starting at once all waited behind)."""
        self._scaffold(self.resolve_model(None).counter, 1.0)

    def prepare_search(self) -> None:
        """What a long-running face does once, off the request path, after its start-up refresh:
        search's postings in memory (``WorkspaceIndex.prepare_search``). A failure is logged;
        searches then stay with FTS5."""
        t0 = time.perf_counter()
        try:
            used = self.index.prepare_search()
        except Exception:
            log.exception("search ready (SQLite FTS5: its postings could not be kept in memory)")
            return
        if used:
            log.info("search ready (postings in memory, %.1f s)", time.perf_counter() - t0)
        else:
            log.info("search ready (SQLite FTS5: too many symbols to keep their postings in memory)")

    # ---- models and tokens -----------------------------------------------------------------

    def resolve_model(self, name: str | None) -> ResolvedModel:
        name = name or self.config.model
        spec = self.registry.lookup(name)
        known = spec is not None
        if spec is None:
            spec = ModelSpec(
                name=name,
                provider="unknown",
                context_length=self.config.default_context_length,
                max_output=self.config.default_max_completion_tokens,
                encoding="cl100k_base",
                native=False,
                calibration=UNKNOWN_MODEL_CALIBRATION,
            )
        counter = counter_for(spec.encoding, self.config.allow_encoding_download)
        exact = spec.native and counter.exact_encoding
        # cl100k standing in for o200k over-counts code slightly: no factor needed to stay safe
        calibration = 1.0 if spec.native else spec.calibration
        estimator = EstimatorInfo(encoding=counter.encoding, exact=exact, calibration=calibration)
        return ResolvedModel(spec=spec, known=known, estimator=estimator, counter=counter)

    def budget(self, model: ResolvedModel, overrides: BudgetOverrides | None = None) -> BudgetSpec:
        """The budget of a request: its own numbers, else the configuration's, else the model's
        (the reply reserve defaults to the smaller of the model's max output and the configured
        default; a prompt a client brings whole sizes the shares and the rag budget around it).
        Every budget — plans, the meter, the compaction threshold, the gateway's — comes from here."""
        config = self.config
        o = overrides or BudgetOverrides()
        # A request's own numbers are checked before any default applies: 0 is an error, not "the
        # default" (None is). The same words as the CLI's options, named as in the protocol.
        for label, value in (("contextLength", o.context_length), ("maxCompletionTokens", o.max_completion_tokens)):
            if value is not None and value <= 0:
                raise UserError(f"{label} must be greater than 0, got {value}")
        for label, value in (("safetyBuffer", o.safety_buffer), ("ragBudget", o.rag_budget)):
            if value is not None and value < 0:
                raise UserError(f"{label} must be 0 or more, got {value}")
        max_completion = o.max_completion_tokens
        if max_completion is None:
            max_completion = config.max_completion_tokens or min(
                model.spec.max_output, config.default_max_completion_tokens
            )
        c = config.shares
        shares = Shares(c.system, c.conversation, c.rag) if o.shares is None else Shares(*o.shares)
        spec = BudgetSpec(
            context_length=model.spec.context_length if o.context_length is None else o.context_length,
            max_completion_tokens=max_completion,
            safety_buffer=config.safety_buffer if o.safety_buffer is None else o.safety_buffer,
            shares=shares,
            rag_budget=o.rag_budget,
        )
        if o.client is None:
            return spec
        sized, rag = client_shares(spec.prompt_budget, shares, o.client, config.gateway.context_budget)
        return msgspec.structs.replace(spec, shares=sized, rag_budget=rag)

    # ---- planning --------------------------------------------------------------------------

    def build_inputs(
        self,
        req: PlanRequest,
        memory: SessionContext = NO_MEMORY,
        carried: ConversationContext = NOTHING_CARRIED,
        *,
        model: ResolvedModel | None = None,
        budget: BudgetSpec | None = None,
    ) -> tuple[PlanInput, TokenCounter, dict[str, float]]:
        """The planner's inputs for a face's request, with what a session's ``memory`` and a
        conversation's ``carried`` context add. ``model`` and ``budget`` are the request's, when
        the caller has resolved them already (the sessions engine does, once per plan)."""
        t0 = time.perf_counter()
        model = model or self.resolve_model(req.model)
        cal = model.estimator.calibration
        notes: list[str] = []
        if not model.known:
            notes.append(
                f"unknown model {model.spec.name!r}: using defaults (context {model.spec.context_length}, "
                f"max output {model.spec.max_output}, cl100k × {cal}); add it under [[models]] in ctx.toml"
            )
        if not model.estimator.exact:
            notes.append(
                f"token counts are estimates: {model.estimator.encoding} × {cal} stands in for "
                f"{model.spec.name}'s own tokenizer"
            )
        budget = budget or self.budget(model, req.budget)
        mode: Mode = req.mode or self.config.mode

        counter = model.counter
        system_text = req.system_prompt  # a client's own, even empty (the gateway), is the system prompt
        if system_text is None:
            system_text = self.config.system_prompt or DEFAULT_SYSTEM_PROMPT
        system_text = system_text.replace("{workspace}", self.root.name)
        if "{languages}" in system_text:
            system_text = system_text.replace("{languages}", self._languages()).replace("  workspace", " workspace")
        required = [text_item("system", SYSTEM_PROMPT, "system prompt", system_text, counter, cal)]
        for rel, text in self.agent_instructions() if req.instructions else ():
            item = text_item("system", INSTRUCTIONS, f"agent instructions: {rel}", text, counter, cal)
            required.append(msgspec.structs.replace(item, path=rel, detail=masked_detail(text)))
        if req.instructions:
            notes.extend(self.instruction_problems.values())
        if self.skipped_files:
            shown = "; ".join(self.skipped_files[:SKIPPED_IN_NOTES])
            more = len(self.skipped_files) - SKIPPED_IN_NOTES
            notes.append(
                f"{len(self.skipped_files)} source files not indexed: {shown}"
                + (f"; and {more} more" if more > 0 else "")
                + " (`ctx-lsp index` lists them)"
            )
        if req.focus is not None:
            required.append(self._focus_item(req.focus, counter, cal))

        messages = (
            list(memory.conversation) if req.query_in_conversation else with_query(memory.conversation, req.query)
        )
        query = req.query.strip()
        if not any(m.role == "user" for m in messages):
            raise UserError("nothing to plan for: give a query (--query or --query-file) or a conversation")
        summary = None
        if memory.summary:
            summary = msgspec.structs.replace(
                text_item(
                    "conversation", COMPACTION_SUMMARY, "summary of earlier conversation", memory.summary, counter, cal
                ),
                tokens=scaled(counter.count(memory.summary) + MESSAGE_OVERHEAD, cal),
            )
        turns = build_turns(messages, counter, cal, sizes=memory.sizes, mask_over=mask_limit(budget))
        conversation = Conversation(turns=turns, summary=summary)
        t_inputs = time.perf_counter()

        pins = [self._pin_by_name(name, n, cal) for n, name in enumerate(req.pins)] + list(memory.extra_pins)
        timings: dict[str, float] = {}
        candidates: list[Item] = []
        scaffold: list[Item] = []
        retrieval_set_id = None
        in_conversation: tuple[str, ...] = ()
        if mode != "off":
            if carried.allowance == 0:
                notes.append(
                    "no automatic context yet: it is paid from what the gateway has saved in this conversation "
                    "(nothing so far; gateway.context_cost)"
                )
            if carried.candidates is not None:
                candidates = list(carried.candidates)
                retrieval_set_id = _retrieval_set_id(content_digest(_set_parts(candidates)))
            else:
                candidates, retrieval_set_id = self._retrieve(
                    req, memory, query, messages, required, pins, mode, counter, cal, timings
                )
                in_conversation = present_ids(candidates, carried.present) if carried.present else ()
            scaffold = (
                carried.scaffold if carried.scaffold is not None else [self._scaffold(counter, cal), *memory.capsules]
            )
        t_retrieval = time.perf_counter()

        inputs = PlanInput(
            model=model.spec.name,
            budget=budget,
            estimator=model.estimator,
            mode=mode,
            required=tuple(required),
            pins=tuple(pins),
            scaffold=tuple(scaffold),
            conversation=conversation,
            candidates=tuple(candidates),
            retrieval_set_id=retrieval_set_id,
            cluster_id=memory.cluster_id,
            notes=tuple(notes),
            allowance=carried.allowance,
            in_conversation=in_conversation,
        )
        timings["inputs"] = (t_inputs - t0) * 1000
        timings["retrieval"] = (t_retrieval - t_inputs) * 1000
        return inputs, counter, timings

    def _retrieve(
        self,
        req: PlanRequest,
        memory: SessionContext,
        query: str,
        messages: list[Message],
        required: list[Item],
        pins: list[PinnedItem],
        mode: Mode,
        counter: TokenCounter,
        cal: float,
        timings: dict[str, float],
    ) -> tuple[list[Item], str]:
        """Retrieval's candidates and their retrieval set id; ``timings`` gets the split of a
        question not answered from memory: ``search``, ``rank`` and ``items`` (making the offered
        symbols' forms), in ms."""
        # retrieval reads the head of each recent question (a pasted log is not a search query),
        # only the user's words of it (``core.harness``); a request's own conversation (the
        # gateway) asks what its query says, which the plan records
        recent = [query]
        if not req.query_in_conversation:
            recent += [user_words(m.content) for m in messages[-3:] if m.role == "user"]
        rag_query = "\n".join(text[:RAG_QUERY_CHARS] for text in recent if text)
        focus_path = req.focus.path if req.focus else None
        # graph seeds: the symbol at the cursor and the pinned symbols
        seeds = tuple(i.symbol for i in (*required, *(p.item for p in pins)) if i.symbol)
        # the same question asked the same way of the same index gets the same candidates: a
        # re-plan after a pin or a message, an agent's requests within one task
        key = (rag_query, tuple(req.open_files), focus_path, seeds, tuple(sorted(memory.activation.items())))
        # not the calibration: what is kept is uncalibrated, and scaled below (a gateway's usage
        # reports move the factor after every reply; kept by factor, each request ranked again)
        key += (mode, counter.encoding, self.config.retrieval_limit)
        retrieved = self.index.memo("retrieved", RETRIEVALS_KEPT)
        found = retrieved.get(key)
        if found is None:
            pointers = signals.read(rag_query)  # tracebacks, paths, names: exact pointers, not words
            ranked = self._ranked(
                rag_query,
                pointers=pointers,
                open_files=req.open_files,
                focus_path=focus_path,
                seeds=seeds,
                activation=memory.activation,
                timings=timings,
            )
            t0 = time.perf_counter()
            fill = retrieval.graph_fill(ranked, self.index)
            offered = tuple(self._offer(ranked, mode, 1.0, fill, thin=pointers.points_at_code()))
            # with the set id's digest of them (ids and scores): a re-plan only adds what history brings
            found = retrieved[key] = (offered, content_digest(_set_parts(offered)))
            timings["items"] = (time.perf_counter() - t0) * 1000
        offered, digest = found
        offered = retrieval.calibrated(offered, cal)
        history = (
            history_candidates(memory.history, rag_query, counter, cal, self.history_chunks) if memory.history else []
        )
        return [*offered, *history], _retrieval_set_id(content_digest(_set_parts(history), digest))

    def _offer(
        self,
        ranked: retrieval.Ranked,
        mode: Mode,
        cal: float,
        fill: Sequence[tuple[retrieval.Head, float, str]] = (),
        *,
        thin: bool = False,
    ) -> list[Item]:
        """The ranked symbols as candidate items: read whole only when offered, and made once
        per row (a row never changes while its id stands: the memo outlasts saves); ``thin``: a
        request that points at code, whose cards are offered thin too."""
        return retrieval.candidates(
            ranked,
            mode,
            cal,
            fill=fill,
            load=self.index.symbols_by_id,
            memo=self.index.memo("items", ITEMS_KEPT, lasting=True),
            code=self.index.code_of,
            count=self.index.count_tokens if thin else None,
        )

    def _ranked(
        self,
        query: str,
        *,
        pointers: signals.Signals | None = None,
        open_files: list[str] | tuple[str, ...] = (),
        focus_path: str | None = None,
        seeds: list[str] | tuple[str, ...] = (),
        activation: dict[str, tuple[float, str]] | None = None,
        timings: dict[str, float] | None = None,
    ) -> retrieval.Ranked:
        """The query's symbols ranked (``pointers``: its signals, when read already)."""
        t0 = time.perf_counter()
        if pointers is None:
            pointers = signals.read(query)  # tracebacks, paths, names: exact pointers, not words
        hits = self.index.search(pointers.search_text, limit=min(self.config.retrieval_limit * 2, 1000))
        t1 = time.perf_counter()
        ranked = retrieval.rank(
            hits,
            query,
            signals=pointers,
            open_files=open_files,
            focus_path=focus_path,
            seeds=seeds,
            graph=self.index,
        )
        ranked = retrieval.with_activation(ranked, activation or {}, self.index.get, reflection.RETRIEVAL_WEIGHT)
        if timings is not None:
            timings["search"] = (t1 - t0) * 1000
            timings["rank"] = (time.perf_counter() - t1) * 1000
        return ranked

    def search_code(
        self,
        query: str,
        budget: int,
        *,
        model: ResolvedModel | None = None,
        seeds: list[str] | tuple[str, ...] = (),
        mode: Mode = "heavy",
    ) -> CodeSearch:
        """Retrieval for ``query`` on its own, within ``budget`` tokens: ranked like a plan's
        (``seeds``: pinned symbols), whole items best first (bodies in heavy mode, a long body's
        card when the body does not fit), each with why it was chosen."""
        if budget <= 0:
            raise UserError(f"budget must be greater than 0 tokens, got {budget}")
        query = query.strip()[:RAG_QUERY_CHARS]
        if not query:
            raise UserError("give a query: words or names to search the code for")
        model = model or self.resolve_model(None)
        cal = model.estimator.calibration
        ranked = self._ranked(query, seeds=seeds)
        candidates = self._offer(ranked, mode, cal)
        included, excluded = select_retrieved(tuple(candidates), budget, mode)
        return CodeSearch(
            query=query,
            budget=budget,
            used=sum(i.tokens for i in included),
            items=included,
            left_out=sum(1 for _, reason in excluded if reason == "budget"),
            ranked=len(ranked),
        )

    def plan(self, req: PlanRequest, memory: SessionContext = NO_MEMORY) -> PlanOutcome:
        inputs, counter, timings = self.build_inputs(req, memory)
        t0 = time.perf_counter()
        result = plan(inputs)
        timings["plan"] = (time.perf_counter() - t0) * 1000
        return PlanOutcome(result=result, inputs=inputs, counter=counter, timings_ms=timings)

    # ---- items -----------------------------------------------------------------------------

    def agent_instructions(self) -> list[tuple[str, str]]:
        """Agent instruction files of the workspace (AGENTS.md, CLAUDE.md, Copilot's): always in
        the prompt, never summarised away. Re-read only when their size or mtime changes."""
        out = []
        for rel in AGENT_INSTRUCTION_FILES:
            path = self.root / rel
            try:
                st = path.stat()
            except OSError:
                continue
            key = (rel, st.st_size, st.st_mtime_ns)
            text = self._instructions_cache.get(key)
            if text is None:
                try:  # a cloned repository decides what these are: a link out of it is never followed
                    text = read_workspace_text(self.root, rel, MAX_INSTRUCTIONS_BYTES)
                except (OSError, PathRefused) as err:
                    text = ""
                    self.instruction_problems[rel] = f"agent instructions {err}: left out of the prompt"
                else:
                    self.instruction_problems.pop(rel, None)
                    text = self.mask_text(text, rel)
                self._instructions_cache = {k: v for k, v in self._instructions_cache.items() if k[0] != rel}
                self._instructions_cache[key] = text
            if text.strip():
                out.append((rel, f"# Agent instructions from {rel}\n{text.strip()}"))
        return out

    def _focus_item(self, focus: Focus, counter: TokenCounter, cal: float) -> Item:
        where = focus.path if focus.line is None else f"{focus.path}:{focus.line + 1}"
        text = f"The user is looking at {where}."
        sym = self.index.symbol_at(focus.path, focus.line) if focus.line is not None else None
        if sym is not None:
            text += (
                f" The cursor is in {kind_label(sym.kind, sym.signature)} {sym.qualname} ({sym.signature or sym.name})."
            )
        item = text_item("system", FOCUS_HINT, f"focus: {where}", text, counter, cal)
        detail = masked_detail(text, sym is not None and sym.secrets > 0)  # the signature of a masked variable
        return msgspec.structs.replace(item, path=focus.path, symbol=sym.qualname if sym else None, detail=detail)

    def _pin_by_name(self, name: str, seq: int, cal: float) -> PinnedItem:
        found = self.index.lookup(name)
        sym = found.symbol
        if sym is None:
            raise UserError(f"cannot pin {name!r}: {found.problem()}")
        item = cards.body_item(sym, cal, section="system")
        return PinnedItem(PinSpec(pin_id=f"cli-{seq}", kind="sticky", seq=seq), item)

    def _languages(self) -> str:
        """The workspace's languages for the system prompt: ``Python``, ``Rust and TypeScript``."""
        key = self.index.counts()
        if self._languages_cache is None or self._languages_cache[0] != key:
            paths = [path for path, _ in self.index.module_symbol_counts()]
            self._languages_cache = (key, describe(display_names(paths)))
        return self._languages_cache[1]

    def _scaffold(self, counter: TokenCounter, cal: float) -> Item:
        # files, symbols, edges: a graph update may change what is central. Not the calibration,
        # which a gateway's usage reports move after every reply: only the tokens follow it.
        key = hash((*self.index.counts(), counter.encoding))
        if self._scaffold_cache and self._scaffold_cache[0] == key:
            item = self._scaffold_cache[1]
            return msgspec.structs.replace(item, tokens=scaled(item.tokens, cal))
        per_module = self.index.module_symbol_counts()
        if len(per_module) > SCAFFOLD_MAX_ENTRIES:  # fold modules into their packages
            folded: Counter[str] = Counter()
            for path, n in per_module:
                parent = PurePosixPath(path).parent
                folded[f"{parent}/" if str(parent) != "." else path] += n
            entries = sorted(folded.items(), key=lambda kv: (-kv[1], kv[0]))[:SCAFFOLD_MAX_ENTRIES]
            entries.sort()
        else:
            entries = per_module
        central = self.index.central_symbols(5)
        files = [path for path, _ in per_module]
        item = cards.scaffold_item(entries, central, self.root.name, counter.count, files=files)
        self._scaffold_cache = (key, item)
        return msgspec.structs.replace(item, tokens=scaled(item.tokens, cal))
