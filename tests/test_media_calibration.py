"""Calibration per content kind: the factor learned from usage reports is a text factor, so the
images and documents of a request (counted the providers' way, ``core.media``) are neither scaled
by it nor allowed to move it. Real SQLite store, real tiktoken."""

from __future__ import annotations

from pathlib import Path

import msgspec

from ctx_lsp.core.conversation import atom_item
from ctx_lsp.core.items import Message
from ctx_lsp.core.tokens import counter_for
from ctx_lsp.engine import Engine
from ctx_lsp.sessions.engine import SessionEngine
from ctx_lsp.sessions.exchanges import Exchange
from ctx_lsp.sessions.values import Usage

IMAGE = 1_600  # a 1568×980 screenshot as Anthropic counts it
MODEL = "claude-sonnet-4-5"


def test_an_atom_scales_its_text_and_keeps_its_images_as_the_provider_counts_them() -> None:
    counter = counter_for("cl100k_base")
    text = Message(id="t", role="user", content="what is wrong in this screenshot? " * 20)
    shot = msgspec.structs.replace(text, media_tokens=IMAGE)
    plain, with_image = atom_item([text], counter, 1.5), atom_item([shot], counter, 1.5)
    assert plain.media == 0 and with_image.media == IMAGE
    assert with_image.tokens == plain.tokens + IMAGE  # before: scaled with the text, 1.5 × 1,600 more


def test_a_factor_is_learned_from_the_text_of_a_request_with_a_screenshot(ws: Path) -> None:
    """Each report counts the text at 1.2× our count, plus the screenshot exactly as we did: the
    factor learned is 1.2 (before: the image diluted it towards 1)."""
    sessions = SessionEngine(Engine(ws))
    try:
        for i in range(5):
            words = f"request {i}: why does the invoice total drop the discount? " * 40
            messages = [Message(id="", role="user", content=words, media_tokens=IMAGE)]
            plan = sessions.plan_exchange(Exchange(session=f"s{i}", model=MODEL, system="Agent", messages=messages))
            p = plan.outcome.result.plan
            media = sum(c.item.media for c in plan.outcome.result.chosen)
            assert media == IMAGE
            cal = plan.outcome.inputs.estimator.calibration
            text = round((p.totals.tokens - IMAGE) / cal)  # what we counted of the text
            sessions.report_usage(f"s{i}", p.plan_id, Usage(input_tokens=round(text * 1.2) + IMAGE, output_tokens=5))
        stats = sessions.store.usage_stats(MODEL)
    finally:
        sessions.close()
    assert stats.reports == 5
    assert stats.factor is not None and abs(stats.factor - 1.2) < 0.01, stats
