"""The published JSON Schema is the one the protocol module generates (clients build on it)."""

from __future__ import annotations

import json
from pathlib import Path

from ctx_lsp.server.protocol import NOTIFICATIONS, REQUESTS, json_schema

SCHEMA = Path(__file__).parent.parent / "docs" / "protocol.schema.json"


def test_committed_schema_is_current():
    committed = json.loads(SCHEMA.read_text())
    assert committed == json.loads(json.dumps(json_schema())), "run `make schema` and commit docs/protocol.schema.json"


def test_every_method_is_documented():
    doc = (SCHEMA.parent / "protocol.md").read_text()
    for method in [*REQUESTS, *NOTIFICATIONS]:
        assert f"`{method}`" in doc, method
