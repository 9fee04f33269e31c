"""Workspaces the user trusts: their settings file may send data off this machine or open a port.

A cloned repository's ``ctx.toml`` (or ``[tool.ctx-lsp]``) is read, but settings that would send
the user's data or keys somewhere (``[llm]``, ``summarizer = "llm"``, encoding downloads) or open
a port (the gateway's ``listen`` and ``token``) are honoured only from the user's own
configuration — the editor's settings, the command line — or once the user trusts that folder
with ``ctx-lsp trust``. Trust is for the file as it was: it is recorded with the file's hash, and
an edit (a ``git pull``) needs trusting again.

The record is the user's, outside every workspace: ``$XDG_CONFIG_HOME/ctx-lsp/trusted.json``
(``~/.config/ctx-lsp/trusted.json``), folder → hash of its settings file.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path


def trust_file() -> Path:
    home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(home) / "ctx-lsp" / "trusted.json"


def settings_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read() -> dict[str, str]:
    try:
        found = json.loads(trust_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return (
        {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(found, dict) else {}
    )


def is_trusted(root: Path, data: bytes) -> bool:
    """Whether the user trusts ``root`` with its settings file as it is now (``data``)."""
    return _read().get(str(root.resolve())) == settings_hash(data)


def record(root: Path, data: bytes | None) -> None:
    """Trust ``root`` with its settings file as it is (``data``), or forget it (None)."""
    trusted = _read()
    key = str(root.resolve())
    if data is None:
        trusted.pop(key, None)
    else:
        trusted[key] = settings_hash(data)
    path = trust_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(trusted, indent=2, sort_keys=True), encoding="utf-8")
    tmp.replace(path)
