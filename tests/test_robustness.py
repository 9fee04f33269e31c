"""The store on disk and the files a workspace names, from the command line: a private store
kept out of git, a corrupt cache that heals itself, a corrupt memory store that is left alone
and named, instruction files read only from inside the root and only up to a size."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctx_lsp.engine import MAX_INSTRUCTIONS_BYTES, Engine, PlanRequest
from tests.workspaces import damage as damage_file

QUERY = "how is the invoice total calculated with tax?"


def ctx(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ctx_lsp", *args], capture_output=True, text=True, timeout=300)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_store_is_private_and_never_staged(ws: Path):
    assert ctx("plan", str(ws), "--query", QUERY).returncode == 0
    store = ws / ".ctx"
    assert "*" in (store / ".gitignore").read_text().splitlines()
    assert store.stat().st_mode & 0o077 == 0
    for name in ("index.sqlite3", "memory.sqlite3"):
        assert (store / name).stat().st_mode & 0o077 == 0, name
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(["git", "-C", str(ws), "add", "-A"], check=True)
    staged = subprocess.run(
        ["git", "-C", str(ws), "diff", "--cached", "--name-only"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "shop/inventory.py" in staged
    assert [p for p in staged if p.startswith(".ctx")] == []


def test_a_store_from_an_earlier_version_gets_its_gitignore_and_modes(ws: Path):
    store = ws / ".ctx"
    store.mkdir()
    (store / "memory.sqlite3").touch(mode=0o644)
    (store / "memory.sqlite3").chmod(0o644)
    assert ctx("plan", str(ws), "--query", QUERY).returncode == 0
    assert (store / ".gitignore").exists()
    assert (store / "memory.sqlite3").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_corrupt_index_is_moved_aside_and_rebuilt(ws: Path, damage: str):
    assert ctx("index", str(ws), "--quiet").returncode == 0
    index = ws / ".ctx" / "index.sqlite3"
    if damage == "garbage":
        damage_file(index, b"not a database at all " * 5000)
    else:
        data = index.read_bytes()
        damage_file(index, data[:100] + b"\xff" * 4000 + data[4100 : len(data) // 2])
    out = ctx("plan", str(ws), "--query", QUERY)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert "calculate_invoice_total" in out.stdout
    assert "could not be read" in out.stderr and "index.sqlite3" in out.stderr
    aside = list(index.parent.glob("index.sqlite3.corrupt-*"))
    assert len([p for p in aside if not p.name.endswith(("-wal", "-shm"))]) == 1
    again = ctx("plan", str(ws), "--query", QUERY)
    assert again.returncode == 0 and "could not be read" not in again.stderr


def test_a_corrupt_memory_store_is_named_left_alone_and_planning_goes_on(ws: Path):
    assert ctx("plan", str(ws), "--query", QUERY).returncode == 0
    memory = ws / ".ctx" / "memory.sqlite3"
    damage_file(memory, b"\x00garbage" * 10_000)
    before = digest(memory)
    out = ctx("plan", str(ws), "--query", QUERY)
    assert out.returncode == 0, out.stderr
    assert "calculate_invoice_total" in out.stdout
    assert str(memory) in out.stderr and "nothing in it was changed" in out.stderr
    report = ctx("report", str(ws))
    assert report.returncode == 2
    assert str(memory) in report.stderr and "Traceback" not in report.stderr
    assert digest(memory) == before  # the user's data, byte for byte


def test_instruction_files_only_from_inside_and_bounded(ws: Path, tmp_path: Path):
    secret = tmp_path / "id_rsa"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nKEYMATERIAL\n-----END OPENSSH PRIVATE KEY-----\n")
    (ws / "AGENTS.md").symlink_to(secret)
    (ws / "CLAUDE.md").write_text("x" * (MAX_INSTRUCTIONS_BYTES + 1))
    (ws / ".github").mkdir()
    (ws / ".github" / "copilot-instructions.md").write_text("Prefer small functions.\n")
    engine = Engine(ws)
    try:
        engine.refresh_index()
        outcome = engine.plan(PlanRequest(query=QUERY))
    finally:
        engine.close()
    prompt = outcome.render("text").text or ""
    assert "KEYMATERIAL" not in prompt and "xxxxxxxx" not in prompt
    assert "Prefer small functions." in prompt  # a well-behaved file still goes in
    notes = "\n".join(outcome.result.plan.notes)
    assert "AGENTS.md" in notes and "CLAUDE.md" in notes and "left out of the prompt" in notes
