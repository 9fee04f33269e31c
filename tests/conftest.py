"""What every test shares: its user configuration (trusted workspaces, ctx_lsp/trust.py) in a
folder of its own, never the real ~/.config (servers a test starts inherit it); and ``ws``, a
fresh copy of the sample workspace (a module that needs another workspace defines its own)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.workspaces import copy_sample


@pytest.fixture(autouse=True)
def _user_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("user-config")
    before = os.environ.get("XDG_CONFIG_HOME")
    os.environ["XDG_CONFIG_HOME"] = str(home)
    yield home
    if before is None:
        os.environ.pop("XDG_CONFIG_HOME", None)
    else:
        os.environ["XDG_CONFIG_HOME"] = before


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return copy_sample(tmp_path / "ws")
