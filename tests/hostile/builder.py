"""A workspace as a hostile (or merely careless) repository would make it.

Every way a cloned tree could smuggle something into a prompt, or stall the tool, in one place:
links out of the root (to a private key, to ``/proc/self/environ``, to ``/etc``), instruction
files that are devices, symlink loops, a 100 MB file, binary and non-UTF-8 ``.py`` files, a FIFO,
folders 300 deep, thousands of empty files, ``.gitignore``d code holding secrets, and secret files
that are not code. Each leak would carry a marker string the tests look for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

OUTSIDE_MARKER = "OUTSIDE-7f3a9c-do-not-leak"  # in files outside the workspace
ENV_MARKER = "ENVIRON-51d2e8-do-not-leak"  # in the process environment (seen via /proc/self/environ)
IGNORED_MARKER = "IGNORED-c44b10-do-not-leak"  # in .gitignore'd code
SECRET_FILE_MARKER = "SECRETFILE-0a9e77-do-not-leak"  # in .env, id_rsa, credentials.json
MARKERS = (OUTSIDE_MARKER, ENV_MARKER, IGNORED_MARKER, SECRET_FILE_MARKER)

CORE = '''"""Order totals."""


def compute_total(prices: list[float], tax_rate: float) -> float:
    """The total of an order with tax, rounded to cents."""
    return round(sum(prices) * (1 + tax_rate), 2)


class Basket:
    """Items a customer is about to buy."""

    def __init__(self) -> None:
        self.prices: list[float] = []

    def total(self, tax_rate: float) -> float:
        return compute_total(self.prices, tax_rate)
'''


@dataclass(frozen=True)
class HostileTree:
    root: Path  # the workspace
    outside: Path  # a folder next to it, which nothing may read

    def leaks(self, text: str) -> list[str]:
        """The markers found in ``text`` (an empty list when nothing leaked)."""
        return [m for m in MARKERS if m in text]


def _link(path: Path, target: str | Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


def build(
    base: Path, *, empty_files: int = 20_000, depth: int = 300, big_bytes: int = 100 * 1024 * 1024
) -> HostileTree:
    root, outside = base / "ws", base / "outside"
    root.mkdir(parents=True)
    outside.mkdir()

    # what lies outside: a key, a module, a note
    (outside / "id_rsa").write_text(
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{OUTSIDE_MARKER}\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    (outside / "outside_mod.py").write_text(f'def leaked():\n    """{OUTSIDE_MARKER}"""\n    return 1\n')
    (outside / "notes.md").write_text(f"# notes\n{OUTSIDE_MARKER}\n")

    # ordinary code, so that a plan has something to show
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text(CORE)

    # agent instruction files and settings that are links out, or devices
    _link(root / "AGENTS.md", "/proc/self/environ")
    _link(root / "CLAUDE.md", "/dev/zero")
    _link(root / ".github" / "copilot-instructions.md", outside / "id_rsa")
    _link(root / "ctx.toml", "/dev/zero")

    # links out of the root, and loops
    _link(root / "etc", "/etc")
    _link(root / "elsewhere", outside)
    _link(root / "pkg" / "outside_mod.py", outside / "outside_mod.py")
    _link(root / "loop" / "again", "..")
    _link(root / "self", ".")
    _link(root / "zero.py", "/dev/zero")

    # ignored code holding secrets: never indexed, open in an editor or not
    (root / ".gitignore").write_text("ignored_secret.py\nprivate/\n")
    (root / "ignored_secret.py").write_text(f'def api_settings():\n    return "{IGNORED_MARKER}"\n')
    (root / "private").mkdir()
    (root / "private" / "keys.py").write_text(f'KEYS = ["{IGNORED_MARKER}"]\n\n\ndef keys():\n    return KEYS\n')

    # secret files that are not code
    (root / ".env").write_text(f"API_KEY={SECRET_FILE_MARKER}\n")
    (root / "id_rsa").write_text(
        f"-----BEGIN RSA PRIVATE KEY-----\n{SECRET_FILE_MARKER}\n-----END RSA PRIVATE KEY-----\n"
    )
    (root / "credentials.json").write_text(f'{{"token": "{SECRET_FILE_MARKER}"}}\n')

    # files a parser must survive, or never read
    with open(root / "huge.py", "wb") as fh:  # sparse: 100 MB without writing 100 MB
        fh.truncate(big_bytes)
    (root / "binary.py").write_bytes(b"\x00\x01\x02def f(): pass\x00" * 100)
    (root / "latin1.py").write_bytes("def caf\xe9():\n    return '\xe9t\xe9'\n".encode("latin-1"))
    os.mkfifo(root / "fifo.py")

    # depth and width
    deep = root.joinpath(*(["d"] * depth))
    deep.mkdir(parents=True)
    (deep / "leaf.py").write_text("def leaf():\n    return 'bottom'\n")
    empty = root / "empty"
    empty.mkdir()
    for n in range(empty_files):
        (empty / f"e{n:05d}.py").touch()
    return HostileTree(root, outside)
