"""Capsules of the workspace: made for the most central modules (or the ones asked for), marked
stale when their file changes, and shown to the planner as scaffold items."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import msgspec

from ctx_lsp.core.items import CAPSULE, Item
from ctx_lsp.core.tokens import counter_for
from ctx_lsp.engine import ResolvedModel, UserError, text_item
from ctx_lsp.memory.capsules import code_hash, make_capsule
from ctx_lsp.memory.llm import WINDOW_ENCODING, ChatClient
from ctx_lsp.sessions.records import Capsule, records
from ctx_lsp.sessions.shared import NotFound, Shared
from ctx_lsp.workspace.files import PathRefused, read_workspace_text
from ctx_lsp.workspace.secrets import masked_detail

CENTRAL_CAPSULES = 5  # capsules made for the most central modules when none are asked for
STALE_BANNER = "[STALE: the module changed since this capsule was made]\n"


@dataclass(slots=True)
class Capsules:
    shared: Shared

    def capsules(self) -> list[Capsule]:
        return records(self.shared.store.capsules(), Capsule)

    def items(self, model: ResolvedModel) -> list[Item]:
        """Capsules as scaffold items, counted like every other item: with ``model``'s counter
        and calibration."""
        engine = self.shared.engine
        counter, cal = model.counter, model.estimator.calibration
        include_stale = engine.config.include_stale_capsules
        out = []
        for c in self.capsules():
            text = engine.mask_text(c.text)  # also what was made before masking was on
            if c.stale and include_stale:
                text = STALE_BANNER + text
            masked = masked_detail(text)
            item = text_item("system", CAPSULE, f"capsule {c.module}", text, counter, cal)
            detail = f"{c.source} capsule, confidence {c.confidence:.1f}" + (" · STALE" if c.stale else "")
            out.append(
                msgspec.structs.replace(
                    item,
                    id=f"capsule:{c.path}@{c.code_hash[:12]}",
                    path=c.path,
                    symbol=c.module,
                    stale=c.stale and not include_stale,
                    detail=detail + (f" · {masked}" if masked else ""),
                )
            )
        return out

    def refresh(self, paths: list[str] | None = None) -> list[Capsule]:
        """(Re)generate capsules: for ``paths``, else for stale ones and the most central modules."""
        engine = self.shared.engine
        index = engine.index
        if paths is None:
            stale = [c.path for c in self.capsules() if c.stale]
            central: list[str] = []
            for qualname in index.central_symbols(CENTRAL_CAPSULES * 3):
                sym = index.get(qualname)
                if sym is not None and sym.path not in central:
                    central.append(sym.path)
            paths = list(dict.fromkeys([*stale, *central[:CENTRAL_CAPSULES]]))
        config = engine.config
        client = ChatClient(config.llm) if config.summarizer == "llm" else None
        count = counter_for(WINDOW_ENCODING).count
        for rel in paths:
            try:
                source = read_workspace_text(engine.root, rel)
            except PathRefused as err:
                raise UserError(str(err)) from None
            except OSError as err:
                raise NotFound(f"cannot read {rel}: {err.strerror or err}") from None
            symbols = index.symbols_in(rel)
            if not symbols:
                raise NotFound(f"{rel} is not an indexed source file")
            module = next((s.qualname for s in symbols if s.kind == "module"), rel)
            imports = [t for _, t in index.imports_of(rel) if index.get(t) is not None]
            text, source_kind, confidence, _note = make_capsule(
                rel,
                module,
                engine.mask_text(source, rel),  # a summariser is a model too
                symbols,
                imports,
                index.importers_of(module),
                client=client,
                count=count,
                window=config.llm.context_length,
            )
            self.shared.store.put_capsule(rel, module, text, code_hash(source, rel), source_kind, confidence)
        return self.capsules()

    def ensure(self) -> None:
        """At start-up: capsules for the most central modules, when the workspace has none yet."""
        if not self.shared.store.capsules():
            with contextlib.suppress(NotFound):  # a workspace with no modules: nothing to summarise
                self.refresh(None)

    def file_saved(self, rel: str, text: str | None = None) -> list[Capsule]:
        """A file was saved (or changed on disk): is its capsule stale now? Returns the capsules
        that just became stale (to notify), after updating the stored state."""
        if text is None:
            try:
                text = read_workspace_text(self.shared.engine.root, rel)
            except (OSError, PathRefused):
                text = None
        became = self.shared.store.check_capsule(rel, code_hash(text, rel) if text is not None else None)
        return [c for c in self.capsules() if c.path == rel] if became else []
