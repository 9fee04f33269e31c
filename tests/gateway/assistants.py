"""How each real AI assistant is run non-interactively against a base URL, with nothing else to reach.

The assistants are installed by ``make assistants`` into ``.tools/`` (aider in its own venv,
Claude Code and Codex with npm). :func:`invocation` gives the exact command, a complete
environment (nothing inherited: a fresh HOME, no keys of the machine's) and the working
directory; pass them to :func:`tests.gateway.netns.run_offline`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.gateway.netns import Urls

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / ".tools"
NODE_BIN = TOOLS / "node" / "node_modules" / ".bin"
AIDER = TOOLS / "aider" / "bin" / "aider"
MODEL = "fake-model"
API_KEY = "sk-fake-offline-key"

NAMES = ("aider", "claude", "codex")
EXECUTABLES = {"aider": AIDER, "claude": NODE_BIN / "claude", "codex": NODE_BIN / "codex"}
# the API each one calls, as the fake upstream's route
ROUTES = {"aider": "/v1/chat/completions", "claude": "/v1/messages", "codex": "/v1/responses"}


@dataclass
class Invocation:
    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path


def installed(name: str) -> bool:
    return os.access(EXECUTABLES[name], os.X_OK)


def missing() -> list[str]:
    return [n for n in NAMES if not installed(n)]


def _base_env(home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {
        "PATH": f"{NODE_BIN}:{AIDER.parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
    }


def aider(workspace: Path, prompt: str, urls: Urls, home: Path) -> Invocation:
    env = _base_env(home)
    # aider downloads litellm's model-price table (once a day, into ~/.aider/caches) unless a fresh
    # non-empty copy is there; litellm itself fetches it at import unless told to use its own copy.
    caches = home / ".aider" / "caches"
    caches.mkdir(parents=True, exist_ok=True)
    info = {"max_input_tokens": 128000, "max_output_tokens": 4096, "litellm_provider": "openai", "mode": "chat"}
    prices = {MODEL: {**info, "input_cost_per_token": 0.0, "output_cost_per_token": 0.0}}
    (caches / "model_prices_and_context_window.json").write_text(json.dumps(prices))
    env.update(
        OPENAI_API_BASE=urls.openai,
        OPENAI_API_KEY=API_KEY,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    argv = [
        str(AIDER),
        "--model",
        f"openai/{MODEL}",
        "--message",
        prompt,
        "--yes-always",
        "--no-git",
        "--no-check-update",
        "--no-show-model-warnings",
        "--analytics-disable",
        "--no-pretty",
        "--no-fancy-input",
    ]
    return Invocation("aider", argv, env, workspace)


def claude(workspace: Path, prompt: str, urls: Urls, home: Path) -> Invocation:
    env = _base_env(home)
    env.update(
        ANTHROPIC_BASE_URL=urls.anthropic,
        ANTHROPIC_API_KEY=API_KEY,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
    )
    return Invocation("claude", [str(NODE_BIN / "claude"), "-p", prompt], env, workspace)


def codex(workspace: Path, prompt: str, urls: Urls, home: Path, model: str | None = MODEL) -> Invocation:
    """``model=None``: Codex's own default model, with the request shape it sends for it."""
    env = _base_env(home)
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        (f'model = "{model}"\n' if model else "") + 'model_provider = "fake"\n'
        "check_for_update_on_startup = false\n"
        "\n"
        "[model_providers.fake]\n"
        'name = "fake upstream"\n'
        f'base_url = "{urls.openai}"\n'
        'env_key = "FAKE_API_KEY"\n'
        'wire_api = "responses"\n'
        "\n"
        "[analytics]\n"
        "enabled = false\n"
        "\n"
        "[features]\n"
        "plugins = false\n"  # else it syncs the curated plugins (github.com, api.github.com, chatgpt.com)
    )
    env.update(CODEX_HOME=str(codex_home), FAKE_API_KEY=API_KEY)
    argv = [str(NODE_BIN / "codex"), "exec", "--skip-git-repo-check", prompt]
    return Invocation("codex", argv, env, workspace)


RECIPES = {"aider": aider, "claude": claude, "codex": codex}


def invocation(name: str, workspace: Path, prompt: str, urls: Urls, home: Path, **kw: Any) -> Invocation:
    """The command, environment and working directory that run assistant ``name`` once."""
    return RECIPES[name](workspace, prompt, urls, home, **kw)
