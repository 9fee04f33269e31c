"""Content ids are kept (plans, retrieval sets, items): how they are computed must not change."""

from __future__ import annotations

from ctx_lsp.core.ids import content_digest, content_id


def test_a_content_id_is_sha256_over_the_parts_each_ended_by_a_nul() -> None:
    # the value the per-part digest gave before the parts were joined into one update
    assert content_id("plan", "card:x@1", "\ud800", "é") == "37acf5bf712e8e3e"
    assert content_id("ab", "c") != content_id("a", "bc")
    assert content_id() != content_id("")
    head = content_digest(["plan"])
    assert content_digest(["card:x@1", "\ud800", "é"], head).hexdigest()[:16] == "37acf5bf712e8e3e"
