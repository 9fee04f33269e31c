"""Secret masking (ctx_lsp.workspace.secrets): detect-secrets' plugins behind fast gates.

Every value below is fake: made up here, shaped like the real thing.
"""

from __future__ import annotations

import ast
import json
import random
import string
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from ctx_lsp.config import validate
from ctx_lsp.core.tokens import counter_for
from ctx_lsp.engine import Engine, PlanRequest
from ctx_lsp.workspace import cards
from ctx_lsp.workspace.index import FTS_COLUMNS, WorkspaceIndex, texts
from ctx_lsp.workspace.parse import split_lines
from ctx_lsp.workspace.secrets import (
    _GATES,
    _GENERIC,
    NOT_USED,
    SecretMasker,
    _plugin_classes,
    describe,
    detector_names,
    masked_detail,
)

_rng = random.Random(12)


def rand(n: int, chars: str = string.ascii_letters + string.digits) -> str:
    return "".join(_rng.choice(chars) for _ in range(n))


HEX = "0123456789abcdef"
LOWER_ALNUM = string.ascii_lowercase + string.digits

# One line per detect-secrets plugin, each holding a secret that plugin finds.
SAMPLES: dict[str, str] = {
    "ArtifactoryDetector": f'repo = "AKCp8{rand(60)}"',
    "AWSKeyDetector": f'access = "AKIA{rand(16, string.ascii_uppercase + string.digits)}"',
    "AzureStorageKeyDetector": f'conn = "DefaultEndpointsProtocol=https;AccountName=x;AccountKey={rand(86)}=="',
    "BasicAuthDetector": 'url = "https://admin:hunter2pass@db.example.com/main"',
    "CloudantDetector": f'cl_key = "{rand(64, HEX)}"',
    "DiscordBotTokenDetector": f'bot = "M{rand(23)}.{rand(6)}.{rand(27)}"',
    "GitHubTokenDetector": f'gh = "ghp_{rand(36)}"',
    "GitLabTokenDetector": f'gl = "glpat-{rand(20)}"',
    "IbmCloudIamDetector": f'ibm_cloud_iam_key = "{rand(44)}"',
    "IbmCosHmacDetector": f'secret_access_key = "{rand(48, HEX)}"',
    "JwtTokenDetector": (
        'jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0'
        'IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"'
    ),
    "MailchimpDetector": f'mc = "{rand(32, LOWER_ALNUM)}-us12"',
    "NpmDetector": f"npmrc = '//registry.npmjs.org/:_authToken=npm_{rand(36)}'",
    "OpenAIDetector": f'client = "sk-{rand(20)}T3BlbkFJ{rand(20)}"',
    "PypiTokenDetector": f'upload = "pypi-AgEIcHlwaS5vcmc{rand(80)}"',
    "SendGridDetector": f'mail = "SG.{rand(22)}.{rand(43)}"',
    "SlackDetector": f'slack = "xoxb-123456789012-1234567890123-{rand(24)}"',
    "SoftlayerDetector": f'softlayer_api_key = "{rand(64, LOWER_ALNUM)}"',
    "SquareOAuthDetector": f'square = "sq0csp-{rand(43)}"',
    "StripeDetector": f'stripe = "sk_live_{rand(24)}"',
    "TelegramBotTokenDetector": f'tg = "123456789:{rand(35)}"',
    "TwilioKeyDetector": f'twilio = "AC{rand(32, LOWER_ALNUM)}"',
    "KeywordDetector": 'password = "c9P!x7#Lq2@vZ8rT"',
    "Base64HighEntropyString": f'signing_key = "{rand(40)}"',
    "HexHighEntropyString": f'token_value = "{rand(40, HEX)}"',
}

PEM_BODY = [rand(64, string.ascii_letters + string.digits + "+/") for _ in range(4)]

FAKE_SETTINGS = f'''"""Settings with hard-coded credentials."""

AWS_ACCESS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
OPENAI_API_KEY = "sk-proj-{rand(48)}"
LIVE_KEY = "sk-live-{rand(40)}"
GITHUB_TOKEN = "ghp_{rand(36)}"
password = "{rand(24, string.ascii_letters + string.digits + "!#%")}"

PRIVATE_KEY = """-----BEGIN RSA PRIVATE KEY-----
{PEM_BODY[0]}
{PEM_BODY[1]}
{PEM_BODY[2]}
{PEM_BODY[3][:30]}==
-----END RSA PRIVATE KEY-----"""


def connect(host):
    if "BEGIN RSA PRIVATE KEY" in host:  # a mention, not a key
        return None
    return host
'''


def values_in(text: str) -> list[str]:
    """The secret values of FAKE_SETTINGS that occur in ``text``."""
    tree = ast.parse(FAKE_SETTINGS)
    values = [n.value.value for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)]
    secrets = [v for v in values if isinstance(v, str)]
    return [v for v in secrets if v in text] + [line for line in PEM_BODY if line[:30] in text]


@pytest.fixture(scope="module")
def masker() -> SecretMasker:
    return SecretMasker()


def test_masks_every_kind_and_keeps_code_readable(masker):
    lines = split_lines(FAKE_SETTINGS)
    new, found = masker.mask_lines(lines)
    text = "".join(new)
    assert values_in(FAKE_SETTINGS)  # the test is not vacuous
    assert values_in(text) == []
    assert len(new) == len(lines)  # lines stay where they were
    ast.parse(text)  # still Python
    assert 'AWS_ACCESS_KEY_ID = "[secret masked: AWS Access Key]"' in text
    assert 'GITHUB_TOKEN = "[secret masked: GitHub Token]"' in text
    assert 'password = "[secret masked: Secret Keyword]"' in text
    assert '"""-----BEGIN RSA PRIVATE KEY-----\n[secret masked: Private Key]\n' in text
    assert "-----END RSA PRIVATE KEY-----" in text
    assert 'if "BEGIN RSA PRIVATE KEY" in host:' in text  # a mention is left alone
    kinds = [k for _, k in found]
    assert kinds.count("Private Key") == 1
    assert {"AWS Access Key", "GitHub Token", "Secret Keyword", "Private Key"} <= set(kinds)
    assert len(found) == 6
    assert describe(kinds).startswith("masked 6 secrets: ")


def test_deterministic_and_idempotent(masker):
    lines = split_lines(FAKE_SETTINGS)
    once, found = masker.mask_lines(lines)
    assert masker.mask_lines(lines) == (once, found)
    assert SecretMasker().mask_lines(lines) == (once, found)
    again, more = masker.mask_lines(once)
    assert again == once and more == []  # a mask is not a secret


@pytest.mark.parametrize("plugin", sorted(SAMPLES))
def test_each_detector_through_its_gate(plugin):
    """Each plugin alone (all others off) finds its sample: the gate lets the line through, and
    what is masked is the whole secret, not a part of it."""
    line = SAMPLES[plugin]
    cls = _plugin_classes()[plugin]
    assert cls().analyze_line(filename="x.py", line=line), "the sample itself must be one the plugin finds"
    only = SecretMasker(disabled=[n for n in detector_names() if n != plugin])
    code = f"def f():\n    x = 1\n    {line}\n    return x\n"
    new, found = only.mask_lines(split_lines(code))
    assert [(i, k) for i, k in found] == [(2, cls.secret_type)]
    masked = new[2]
    value = line.split("=", 1)[1].strip().strip("\"'")
    secret = value.rsplit(":", 1)[-1].split("@")[0] if plugin == "BasicAuthDetector" else value
    assert secret not in masked
    assert f"[secret masked: {cls.secret_type}]" in masked
    ast.parse("".join(new))


def test_every_plugin_is_gated():
    """A detect-secrets upgrade that adds a plugin still masks (the plugin's own patterns run
    over the whole text) but slowly: give it a gate."""
    known = set(_GATES) | set(_GENERIC) | NOT_USED
    assert set(_plugin_classes()) <= known, sorted(set(_plugin_classes()) - known)


def test_allowlist_pragma_and_configured_allowlist():
    key = "AKIAIOSFODNN7EXAMPLE"
    code = f'a = "{key}"  # pragma: allowlist secret\n# pragma: allowlist nextline secret\nb = "{key}"\nc = "{key}"\n'
    new, found = SecretMasker().mask_lines(split_lines(code))
    assert [i for i, _ in found] == [3]
    assert new[:3] == split_lines(code)[:3]
    new, found = SecretMasker(allowlist=[r"EXAMPLE$"]).mask_lines(split_lines(code))
    assert found == []
    new, found = SecretMasker(disabled=["AWSKeyDetector"]).mask_lines(split_lines(code))
    assert found == []


ORDINARY = '''"""Ordinary code: nothing here is a secret."""
import hashlib
import uuid

EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
REQUEST_ID = "123e4567-e89b-12d3-a456-426614174000"
NAMESPACE = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
HELLO_B64 = "aGVsbG8gd29ybGQ="
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
password = get_password()
api_key = os.environ["API_KEY"]
SECRET_KEY = settings.SECRET_KEY
token = "${TOKEN}"


def test_digest():
    assert hashlib.sha256(b"").hexdigest() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert hashlib.md5(b"x").hexdigest() == "9dd4e461268c8034f5c8564e155c67a6"
    expected_hash = "ff5d0a2b1b2d5a6c8e7b9a0c3d4e5f60718293a4"


class Integer(Rational):
    """An integer; see https://docs.python.org/3/library/functions.html#int."""

    def _eval_power(self, expt):
        if expt is S.Infinity:
            return S.Zero
        return Pow(self, expt, evaluate=False)
'''


def test_ordinary_code_is_left_alone(masker):
    new, found = masker.mask_lines(split_lines(ORDINARY))
    assert found == []
    assert "".join(new) == ORDINARY


def test_markdown_and_long_lines(masker):
    md = f"# Setup\n\nUse the key `AKIAIOSFODNN7EXAMPLE` and token ghp_{rand(36)} for CI.\n"
    result = masker.mask(md)
    assert "AKIAIOSFODNN7EXAMPLE" not in result.text and "ghp_" not in result.text
    assert result.detail == "masked 2 secrets: AWS Access Key, GitHub Token"
    long = "DATA = [" + ", ".join(f'"{i:08d}"' for i in range(3000)) + f', "ghp_{rand(36)}"]\n'
    assert len(long) > 20_000
    new, found = masker.mask_lines([long])
    assert [k for _, k in found] == ["GitHub Token"] and "ghp_" not in new[0]


def test_masked_detail_needs_secrets():
    text = 'KEY = "[secret masked: AWS Access Key]"'
    assert masked_detail(text) == "masked 1 secret: AWS Access Key"
    assert masked_detail(text, has_secrets=False) is None  # the source's own text, not a mask
    assert describe(["A", "B", "A"]) == "masked 3 secrets: A ×2, B"
    assert describe([]) is None


# ---- the index: texts are masked before they are parsed, counted and stored --------------


def make_ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "app").mkdir(parents=True)
    (root / "app" / "__init__.py").write_text("", encoding="utf-8")
    (root / "app" / "settings.py").write_text(FAKE_SETTINGS, encoding="utf-8")
    (root / "app" / "plain.py").write_text(ORDINARY, encoding="utf-8")
    return root


def stored_texts(idx: WorkspaceIndex) -> str:
    """Every text the index stored, as stored: the symbols' columns (packed ones unpacked) and
    the search terms of the FTS rows."""
    conn = idx._reader()
    out = []
    for *plain, packed in conn.execute("SELECT qualname, signature, docstring, card, body, packed FROM symbols"):
        out += [*plain, *(texts.unpack(packed) if packed is not None else ())]
    for row in conn.execute(f"SELECT {', '.join(FTS_COLUMNS)} FROM symbols_fts"):
        out += row
    return "\n".join(out)


@pytest.mark.parametrize("processes", [0, 2])
def test_index_masks_before_parsing_counting_and_storing(tmp_path, processes):
    ws = make_ws(tmp_path)
    db = tmp_path / "index.sqlite3"
    with WorkspaceIndex(ws, db_path=db) as idx:
        stats = idx.refresh(processes=processes)
        assert stats.errors == [] and stats.processes == max(processes, 1)
        assert values_in(stored_texts(idx)) == []
        count = counter_for("cl100k_base").count
        by_name = {s.qualname: s for s in idx.iter_symbols()}
        key = by_name["app.settings.AWS_ACCESS_KEY_ID"]
        assert key.secrets == 1 and key.signature == "AWS_ACCESS_KEY_ID = '[secret masked: AWS Access Key]'"
        assert key.body_tokens == count(key.body)  # counts are of the masked text
        assert by_name["app.settings"].secrets == 6
        assert by_name["app.settings.connect"].secrets == 0
        assert all(s.secrets == 0 for s in by_name.values() if s.path == "app/plain.py")
        card = cards.card_item(key, 1.0)
        assert card.detail == "masked 1 secret: AWS Access Key"
        pem = cards.body_item(by_name["app.settings.PRIVATE_KEY"], 1.0)
        assert pem.detail == "masked 1 secret: Private Key" and "[secret masked: Private Key]" in pem.text
        assert cards.body_item(by_name["app.settings.connect"], 1.0).detail is None
        # search still finds the masked symbols by name, not by secret
        assert idx.search("GITHUB_TOKEN")[0].symbol.qualname == "app.settings.GITHUB_TOKEN"
    # nothing of the secrets is on disk in the index (the cache the README says can be shared
    # with nobody but is easy to copy around)
    on_disk = b"".join(p.read_bytes() for p in tmp_path.glob("index.sqlite3*"))
    assert b"AKIAIOSFODNN7EXAMPLE" not in on_disk and PEM_BODY[0].encode() not in on_disk


def test_index_rebuilds_when_masking_changes(tmp_path):
    ws = make_ws(tmp_path)
    db = tmp_path / "index.sqlite3"
    with WorkspaceIndex(ws, db_path=db) as idx:
        idx.refresh(processes=0)
        assert values_in(stored_texts(idx)) == []
    with WorkspaceIndex(ws, db_path=db, masker=None) as idx:  # turned off: rebuilt, values back
        assert idx.stats().symbols == 0
        assert idx.refresh(processes=0).files_indexed == 3
        assert sorted(values_in(stored_texts(idx))) == sorted(values_in(FAKE_SETTINGS))
        assert idx.get("app.settings.AWS_ACCESS_KEY_ID").secrets == 0
        # turned on at run time: emptied at once (nothing unmasked stays visible), rebuilt by a refresh
        assert idx.set_masker(SecretMasker()) is True
        assert idx.stats().symbols == 0
        assert idx.set_masker(SecretMasker()) is False  # same masking: nothing to do
        idx.refresh(processes=0)
        assert values_in(stored_texts(idx)) == [] and idx.get("app.settings").secrets == 6
    with WorkspaceIndex(ws, db_path=db, masker=SecretMasker(allowlist=["EXAMPLE"])) as idx:
        idx.refresh(processes=0)  # another allowlist is another masking: rebuilt
        assert values_in(stored_texts(idx)) == ["AKIAIOSFODNN7EXAMPLE"]


def test_buffer_updates_are_masked(tmp_path):
    ws = make_ws(tmp_path)
    with WorkspaceIndex(ws, db_path=tmp_path / "i.sqlite3") as idx:
        idx.refresh(processes=0)
        token = f"ghp_{rand(36)}"
        edited = ORDINARY + f'\n\nDEPLOY_TOKEN = "{token}"\n'
        assert idx.update_file("app/plain.py", edited.encode()) is True
        sym = idx.get("app.plain.DEPLOY_TOKEN")
        assert sym is not None and sym.secrets == 1
        assert token not in stored_texts(idx)


def test_a_masked_secret_outside_strings_does_not_index_the_file(tmp_path):
    ws = make_ws(tmp_path)
    (ws / "app" / "odd.py").write_text("def f():\n    return AKIAIOSFODNN7EXAMPLE\n", encoding="utf-8")
    with WorkspaceIndex(ws, db_path=tmp_path / "i.sqlite3") as idx:
        stats = idx.refresh(processes=0)
        assert any("odd.py" in e and "after masking secrets" in e for e in stats.errors)
        assert "AKIAIOSFODNN7EXAMPLE" not in stored_texts(idx)


# ---- end to end: the CLI ----------------------------------------------------------------

AGENTS_MD = f"# Agents\n\nDeploy with the token ghp_{rand(36)} (never commit it).\n"
QUERY = "which AWS access key, OpenAI API key, GitHub token, password and private key do the settings use?"


def ctx(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ctx_lsp", *args], capture_output=True, text=True, timeout=120)


def secret_ws(tmp_path: Path) -> Path:
    ws = make_ws(tmp_path)
    (ws / "AGENTS.md").write_text(AGENTS_MD, encoding="utf-8")
    return ws


def leaks(text: str) -> list[str]:
    token = AGENTS_MD.split("token ")[1].split()[0]
    return values_in(text) + ([token] if token in text else [])


def test_cli_plan_never_shows_secrets_and_says_what_was_masked(tmp_path):
    ws = secret_ws(tmp_path)
    for mode in ("light", "heavy"):
        out = ctx("plan", str(ws), "--query", QUERY, "--mode", mode, "--format", "prompt")
        assert out.returncode == 0, out.stderr
        assert "[secret masked: AWS Access Key]" in out.stdout
        assert leaks(out.stdout) == [], mode
    args = ("plan", str(ws), "--query", QUERY, "--mode", "heavy", "--format", "json")
    out = ctx(*args, "--pin", "app.settings.PRIVATE_KEY")
    assert out.returncode == 0, out.stderr
    assert leaks(out.stdout) == []
    plan = json.loads(out.stdout)
    details = {i["title"]: i.get("detail") or "" for i in plan["included"]}
    assert details["agent instructions: AGENTS.md"] == "masked 1 secret: GitHub Token"
    pin = details["variable app.settings.PRIVATE_KEY (body)"]
    assert pin == "masked 1 secret: Private Key · sticky pin · no ttl · priority 0"
    assert details["variable app.settings.AWS_ACCESS_KEY_ID (body)"].startswith("masked 1 secret: AWS Access Key · ")
    assert not any("masked" in d for t, d in details.items() if "connect" in t or "plain" in t)
    assert ctx(*args, "--pin", "app.settings.PRIVATE_KEY").stdout == out.stdout  # same inputs, same plan


def test_cli_with_masking_off_shows_the_values(tmp_path):
    ws = secret_ws(tmp_path)
    assert ctx("index", str(ws), "--quiet").returncode == 0  # built masked first
    (ws / "ctx.toml").write_text("mask_secrets = false\n", encoding="utf-8")
    out = ctx("plan", str(ws), "--query", QUERY, "--mode", "heavy", "--format", "prompt")
    assert out.returncode == 0, out.stderr
    assert "[secret masked" not in out.stdout
    assert "AKIAIOSFODNN7EXAMPLE" in out.stdout and AGENTS_MD.split("token ")[1].split()[0] in out.stdout


def test_config_names_bad_secret_settings(tmp_path):
    config, messages = validate({"secretDetectorsOff": ["AWSKeyDetector", "NoSuchDetector"]}, "ctx.toml")
    assert config.secret_detectors_off == () and "unknown detector NoSuchDetector" in messages[0]
    assert "HexHighEntropyString" in messages[0]  # the valid names are listed
    config, messages = validate({"secretAllowlist": ["(unclosed"]}, "ctx.toml")
    assert config.secret_allowlist == () and "not a regular expression" in messages[0]
    config, messages = validate({"maskSecrets": False, "secretAllowlist": ["^EXAMPLE"]}, "ctx.toml")
    assert messages == [] and config.mask_secrets is False and config.secret_allowlist == ("^EXAMPLE",)


def test_engine_switches_masking_at_run_time(tmp_path):
    ws = secret_ws(tmp_path)
    engine = Engine(ws)
    try:
        engine.refresh_index()
        masked = engine.plan(PlanRequest(query=QUERY, mode="heavy")).render("text").text
        assert leaks(masked) == []
        engine.apply_config(msgspec.structs.replace(engine.config, mask_secrets=False))
        plain = engine.plan(PlanRequest(query=QUERY, mode="heavy")).render("text").text
        assert "AKIAIOSFODNN7EXAMPLE" in plain and "[secret masked" not in plain
        engine.apply_config(msgspec.structs.replace(engine.config, mask_secrets=True))
        assert leaks(engine.plan(PlanRequest(query=QUERY, mode="heavy")).render("text").text) == []
    finally:
        engine.close()


def test_a_key_cut_short_on_one_line(masker):
    """A summary shows a value on one line, escaped and cut: the key material still goes."""
    line = f"- PRIVATE_KEY = '-----BEGIN RSA PRIVATE KEY-----\\n{PEM_BODY[0]}\\n{PEM_BODY[1][:9]}…\n"
    result = masker.mask(line)
    assert PEM_BODY[0] not in result.text and PEM_BODY[1][:9] not in result.text
    assert result.text.startswith("- PRIVATE_KEY = '-----BEGIN RSA PRIVATE KEY-----\\n[secret masked: Private Key]")
    assert result.detail == "masked 1 secret: Private Key"


def test_a_random_string_alone_is_not_a_secret():
    """ETags, hashes and test data are random-looking too: the entropy plugins mask a string
    only when its line names a secret (provider formats have rules of their own)."""
    masker = SecretMasker()
    etag = 'assert response.headers["ETag"] == "\\"a3f8e1c9b27d4f60e5a1b2c3d4e5f6a7b8c9d0e1\\""\n'
    blob = 'PAYLOAD = "eHh4IGRhdGEgZm9yIGEgdGVzdCBub3QgYSBzZWNyZXQgYXQgYWxs"\n'
    assert masker.mask_lines([etag, blob])[1] == []
    named = 'API_TOKEN = "eHh4IGRhdGEgZm9yIGEgdGVzdCBub3QgYSBzZWNyZXQgYXQgYWxs"\n'
    assert [k for _, k in masker.mask_lines([named])[1]]
