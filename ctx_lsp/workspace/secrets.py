"""Secrets in workspace text are masked before anything derived from it can reach a model.

Detection is detect-secrets' (Yelp): its plugins (AWS keys, private keys, GitHub, GitLab,
Slack, Stripe, OpenAI, JWT, basic-auth URLs, secret-named assignments, high-entropy strings,
...) and its default false-positive filters (sequential strings, UUIDs, ``*_id`` values,
templates, indirect references, values without a letter), and its allowlist pragma:
``# pragma: allowlist secret`` on the line, or ``# pragma: allowlist nextline secret`` on the
line before. The public-IP plugin is not used: an address is not a credential.

Running every plugin on every line costs ~30 µs a line (about 25 s of CPU for sympy's 750k
lines). So, as gitleaks does with its rules' keywords, each plugin runs only on the lines
that can hold a match: a line with one of the plugin's literal markers (``AKIA``, ``ghp_``,
``PRIVATE KEY``, the keyword plugin's own word list, ...) or with a run of token characters
long enough for its shortest secret. Finding those lines takes a few fast passes over the
whole text (``bytes.find`` on plain and translated copies); masking all of sympy costs ~0.8 s
of CPU that way, spread over the indexer's parse processes. A plugin without a gate here (a
newer detect-secrets may add some) runs its own patterns over the whole text instead: slower,
never blind.

Masking keeps code readable and lines where they were (ranges stay right): a value becomes
``[secret masked: AWS Access Key]``; a private key block keeps its BEGIN/END lines and loses
its key material. Quotes and backslashes next to a value are never touched, so a string
literal stays a string literal.

One module on purpose (~560 lines): a fifth of it is the table of gates, one row per
detect-secrets plugin, and the gates, the scan and the masking are one pipeline over one text.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import re
import string
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

PLACEHOLDER = "[secret masked: {}]"
_PLACEHOLDER_RE = re.compile(r"\[secret masked: ([^\]\n]{1,60})\]")
_MARK = "secret masked"

NOT_USED = frozenset({"IPPublicDetector"})  # public IP addresses are not credentials

# Token characters: detect-secrets' base64 charset (its Base64HighEntropyString's, backslash
# included). Runs of them are what most plugins' secrets are made of.
_TOKEN_CHARS = string.ascii_letters + string.digits + "+/\\-_="
_RUN_MIN = 20  # runs at least this long are collected in one pass over the whole text
_MAX_KEY_LINES = 200  # how far a private key block is followed when it has no END line
_WINDOW, _OVERLAP = 4096, 512  # longer lines are scanned in windows this long, overlapping this much


@dataclass(frozen=True, slots=True)
class _Gate:
    """When a plugin may find something on a line: the line holds one of ``words`` (none: any
    line) and a run of at least ``min_run`` token characters."""

    words: tuple[str, ...] = ()
    ignore_case: bool = False
    min_run: int = 0


# Per plugin, gates any one of which a line must pass. Each word is a literal that every match
# of the plugin's patterns (its ``denylist``) contains; min_run is the shortest run of token
# characters a match has. tests/test_secrets.py runs each plugin alone through its gate.
_KEY_WORDS = ("key", "pwd", "pw", "pass", "token")
_GATES: dict[str, tuple[_Gate, ...]] = {
    "ArtifactoryDetector": (_Gate(("AKC", "AP"), min_run=11),),
    "AWSKeyDetector": (_Gate(("AKIA", "ASIA", "ABIA", "ACCA", "A3T"), min_run=20), _Gate(("aws",), True, 40)),
    "AzureStorageKeyDetector": (_Gate(("AccountKey=",), min_run=99),),
    "BasicAuthDetector": (_Gate(("://",)),),
    "CloudantDetector": (_Gate(_KEY_WORDS, True, 24), _Gate(("cloudant",), True, 24)),
    "DiscordBotTokenDetector": (_Gate(min_run=24),),
    "GitHubTokenDetector": (_Gate(("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), min_run=40),),
    "GitLabTokenDetector": (
        _Gate(("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "GR1348941"), min_run=25),
        _Gate(("glcbt-", "glimt-", "glptt-", "glagent-", "gloas-"), min_run=25),
    ),
    "IbmCloudIamDetector": (_Gate(_KEY_WORDS, True, 44),),
    "IbmCosHmacDetector": (_Gate(("secret",), True, 48),),
    "JwtTokenDetector": (_Gate(("eyJ",)),),
    "MailchimpDetector": (_Gate(("-us",), min_run=32),),
    "NpmDetector": (_Gate(("_authToken=",)),),
    "OpenAIDetector": (_Gate(("T3BlbkFJ",), min_run=51),),
    "PrivateKeyDetector": (_Gate(("PRIVATE KEY", "PuTTY-User-Key-File-2")),),
    "PypiTokenDetector": (_Gate(("pypi-AgE",), min_run=80),),
    "SendGridDetector": (_Gate(("SG.",), min_run=43),),
    "SlackDetector": (_Gate(("xox", "hooks.slack.com"), True),),
    "SoftlayerDetector": (_Gate(_KEY_WORDS, True, 64), _Gate(("softlayer",), True, 64)),
    "SquareOAuthDetector": (_Gate(("sq0csp-",), min_run=50),),
    "StripeDetector": (_Gate(("k_live_",), min_run=32),),
    "TelegramBotTokenDetector": (_Gate(min_run=35),),
    "TwilioKeyDetector": (_Gate(("AC", "SK"), min_run=34),),
}
# Which plugins are the most specific: a span found by several is named after the first here.
_GENERIC = ("KeywordDetector", "Base64HighEntropyString", "HexHighEntropyString")

# The translated copy of a text: token characters → b"t" (hex digits → b"h"), quotes → b"q",
# everything else (line breaks included) → b" ".
_TRANSLATE = bytes(
    ord("h")
    if chr(i) in string.hexdigits
    else ord("t")
    if chr(i) in _TOKEN_CHARS
    else ord("q")
    if chr(i) in "'\""
    else ord(" ")
    for i in range(256)
)
# Token characters → b"t", everything else → b" ".
_RUNS = bytes(ord("t") if chr(i) in _TOKEN_CHARS else ord(" ") for i in range(256))
_RUN_NEEDLE = b"t" * _RUN_MIN
_LINE_RUN = re.compile(r"[A-Za-z0-9+/\\\-_=]+")
# Inside a private key block: escapes (``\n`` in a one-line literal) are kept, runs of key
# characters go.
_KEY_MATERIAL = re.compile(r"(\\.)|([A-Za-z0-9+/=]{2,})")
_KEY_HEADER = re.compile(r"^\s*[\"']?[A-Za-z][A-Za-z-]*: ")
_KEY_TEXT = re.compile(r"(?:\\.|[A-Za-z0-9+/=\s\"'(),;-])*")
_KEY_LONG_RUN = re.compile(r"[A-Za-z0-9+/=]{32,}")
_KEY_END = re.compile(r"-----END[ A-Z0-9]*-----|END [A-Z0-9 ]*PRIVATE KEY")
_KEY_BEGIN = re.compile(r"BEGIN[ A-Z0-9]*PRIVATE KEY[ A-Z]*(?:-----)?|PuTTY-User-Key-File-2")
_QUOTES_AND_ESCAPES = re.compile(r"[\"'`\\]+")
# A line naming a digest: a hex string on it is that digest (hashes in tests, lock data).
_DIGEST_WORDS = re.compile(r"hash|sha\d|sha_|md5|digest|checksum|blake2|crc32", re.IGNORECASE)
_ENTROPY_KINDS = frozenset({"Hex High Entropy String", "Base64 High Entropy String"})
_SECRET_WORDS = re.compile(r"key|secret|token|passw|pwd|credential|auth|bearer|private|api_?", re.IGNORECASE)


@cache
def _compiled(pattern: str | bytes, flags: int = 0) -> re.Pattern:
    return re.compile(pattern, flags)


class _TextView:
    """One text, prepared for fast gating: ``raw`` (ASCII, one byte per character), ``low``
    (its lower case), ``shape`` (translated: token characters → t/h, quotes → q), and the lines
    holding a run of at least ``_RUN_MIN`` token characters (``long_runs``: line → longest)."""

    def __init__(self, text: str, lines: Sequence[str], starts: list[int]) -> None:
        self.lines = lines
        self.starts = starts
        self.raw = text.encode("ascii", "replace")
        self.shape = self.raw.translate(_TRANSLATE)
        self._low: bytes | None = None
        self.long_runs: dict[int, int] = {}
        runs = self.raw.translate(_RUNS)  # find() on this beats any regex by far
        i = runs.find(_RUN_NEEDLE)
        while i >= 0:
            end = runs.find(b" ", i + _RUN_MIN)
            end = len(runs) if end < 0 else end
            line = self.line_of(i)
            self.long_runs[line] = max(self.long_runs.get(line, 0), end - i)
            i = runs.find(_RUN_NEEDLE, end)
        self._long: tuple[list[int], list[int], bytes, bytes] | None = None

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    @property
    def low(self) -> bytes:
        if self._low is None:
            self._low = self.raw.lower()
        return self._low

    def _long_text(self) -> tuple[list[int], list[int], bytes, bytes]:
        """The lines with long runs, joined: words that only occur in long tokens are looked
        for there (a few percent of a code base) instead of in the whole text."""
        if self._long is None:
            rows = sorted(self.long_runs)
            raw, starts = self.raw, self.starts
            joined = b"".join(raw[starts[i] : starts[i + 1]] + b"\n" for i in rows)
            offsets = [0, *itertools.accumulate(starts[i + 1] - starts[i] + 1 for i in rows)]
            self._long = (rows, offsets, joined, joined.lower())
        return self._long

    def word_lines(self, words: Iterable[str], ignore_case: bool, min_run: int = 0) -> set[int]:
        """Lines holding one of ``words`` and a run of at least ``min_run`` token characters."""
        if min_run >= _RUN_MIN:
            rows, offsets, joined, joined_low = self._long_text()
            hay = joined_low if ignore_case else joined

            def line_at(i: int) -> tuple[int, int]:
                k = bisect.bisect_right(offsets, i) - 1
                return rows[k], offsets[k + 1]
        else:
            hay = self.low if ignore_case else self.raw

            def line_at(i: int) -> tuple[int, int]:
                line = self.line_of(i)
                return line, self.starts[line + 1]

        found: set[int] = set()
        for word in words:
            needle = (word.lower() if ignore_case else word).encode("ascii", "replace")
            i = hay.find(needle)
            while i >= 0:
                line, nxt = line_at(i)
                found.add(line)
                i = hay.find(needle, max(nxt, i + 1))
        if min_run <= 0:
            return found
        if min_run >= _RUN_MIN:
            return {i for i in found if self.long_runs.get(i, 0) >= min_run}
        return {i for i in found if any(len(r) >= min_run for r in _LINE_RUN.findall(self.lines[i]))}


def _keyword_roots(denylist: Iterable[str]) -> list[str]:
    """Words one of which every match of the keyword plugin contains: its list is of
    ``prefix_?word`` patterns (``api_?key``), so ``word``; ``password`` drops for ``pass``."""
    words = {w.rsplit("_?", 1)[-1][:8] for w in denylist}  # "contrase" for contraseña and contrasena
    return sorted(w for w in words if not any(o != w and o in w for o in words))


@cache
def detector_version() -> str:
    """detect-secrets' version, without importing it (that costs ~0.3 s)."""
    from importlib.metadata import version

    return version("detect-secrets")


@cache
def _plugin_classes() -> dict[str, type]:
    """Every detect-secrets plugin by class name (the names settings use)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    return {cls.__name__: cls for cls in get_mapping_from_secret_type_to_class().values()}


def detector_names() -> list[str]:
    """The names of the detectors masking can use (detect-secrets plugin class names)."""
    return sorted(set(_plugin_classes()) - NOT_USED)


def masked_types(text: str) -> list[str]:
    """The kinds of secret masked in ``text``, one entry per mask, in order."""
    if _MARK not in text:
        return []
    return _PLACEHOLDER_RE.findall(text)


def describe(types: Iterable[str]) -> str | None:
    """``"masked 2 secrets: AWS Access Key, Private Key"`` (``×n`` for repeats), or None."""
    counts = Counter(types)
    if not counts:
        return None
    n = sum(counts.values())
    kinds = ", ".join(f"{t} ×{c}" if c > 1 else t for t, c in sorted(counts.items()))
    return f"masked {n} secret{'s' if n > 1 else ''}: {kinds}"


def masked_detail(text: str, has_secrets: bool = True) -> str | None:
    """The ``detail`` of an item whose ``text`` went through masking: what was masked in it.
    ``has_secrets`` False (its source had none) skips the look: then any placeholder-like
    text is the source's own."""
    return describe(masked_types(text)) if has_secrets else None


@dataclass(frozen=True, slots=True)
class Masked:
    """A masked text and what was masked in it: ``(line, kind)`` per secret, 0-based lines."""

    text: str
    findings: tuple[tuple[int, str], ...] = ()

    @property
    def detail(self) -> str | None:
        return describe(kind for _, kind in self.findings)


class SecretMasker:
    """Masks secrets in text, with detect-secrets' plugins and filters. Thread-safe; cheap to
    build (the plugins are loaded on first use); ``fingerprint`` names everything that decides
    its output, so an index built with another masker is rebuilt."""

    def __init__(self, disabled: Iterable[str] = (), allowlist: Iterable[str] = ()) -> None:
        self.disabled = tuple(sorted(set(disabled)))
        self.allowlist = tuple(allowlist)
        self._allow = [re.compile(p) for p in self.allowlist]
        self._lock = threading.Lock()
        self._plugins: list[tuple[str, object, tuple[_Gate, ...] | None]] | None = None
        allow = hashlib.sha256("\0".join(self.allowlist).encode()).hexdigest()[:12] if self.allowlist else "-"
        self._settings = f"off {','.join(self.disabled) or '-'}; allow {allow}"

    @property
    def fingerprint(self) -> str:
        return f"detect-secrets {detector_version()}; {self._settings}"

    def _load(self) -> list[tuple[str, object, tuple[_Gate, ...] | None]]:
        with self._lock:
            if self._plugins is None:
                classes = _plugin_classes()
                skip = NOT_USED | set(self.disabled)
                specific = [n for n in sorted(classes) if n not in skip and n not in _GENERIC]
                generic = [n for n in _GENERIC if n in classes and n not in skip]
                self._plugins = [(n, classes[n](), _GATES.get(n)) for n in (*specific, *generic)]
            return self._plugins

    # -- detection -------------------------------------------------------------------------

    def _candidates(self, text: str, lines: Sequence[str], starts: list[int]) -> dict[int, list[int]]:
        """Line → indexes of the plugins worth running on it."""
        from detect_secrets.plugins.base import RegexBasedDetector
        from detect_secrets.plugins.high_entropy_strings import HexHighEntropyString, HighEntropyStringsPlugin
        from detect_secrets.plugins.keyword import DENYLIST, DENYLIST_REGEX

        view = _TextView(text, lines, starts)
        out: dict[int, list[int]] = {}
        for k, (name, plugin, gates) in enumerate(self._load()):
            hits: set[int] = set()
            if isinstance(plugin, HighEntropyStringsPlugin):
                # a string's entropy is at most log2(its length): shorter ones never pass
                n = int(2**plugin.entropy_limit) + 1
                cls = b"h" if isinstance(plugin, HexHighEntropyString) else b"[ht]"
                hits = {view.line_of(m.start()) for m in _compiled(rb"q%s{%d,}q" % (cls, n)).finditer(view.shape)}
            elif name == "KeywordDetector":
                denied = _compiled(DENYLIST_REGEX, re.IGNORECASE)
                hits = {i for i in view.word_lines(_keyword_roots(DENYLIST), True) if denied.search(lines[i])}
            elif gates is not None:
                for gate in gates:
                    if gate.words:
                        hits |= view.word_lines(gate.words, gate.ignore_case, gate.min_run)
                    else:
                        hits |= {i for i, n in view.long_runs.items() if n >= gate.min_run}
            elif isinstance(plugin, RegexBasedDetector):  # no gate known: its own patterns, whole text
                for regex in plugin.denylist:
                    for m in _compiled(regex.pattern, regex.flags | re.MULTILINE).finditer(text):
                        hits.update(range(view.line_of(m.start()), view.line_of(max(m.end() - 1, m.start())) + 1))
            else:
                hits = set(range(len(lines)))
            for line in hits:
                out.setdefault(line, []).append(k)
        return out

    def _allowed(self, secret: str, line: str, plugin: object, lines: Sequence[str], i: int) -> bool:
        """detect-secrets' default filters, the allowlist pragma, and our own allowlist."""
        from detect_secrets.filters import heuristic
        from detect_secrets.filters.allowlist import is_line_allowlisted
        from detect_secrets.util.code_snippet import get_code_snippet

        if _MARK in secret:  # already masked
            return True
        kind = getattr(plugin, "secret_type", "")
        if kind == "Hex High Entropy String" and _DIGEST_WORDS.search(line):
            return True  # a digest next to its name (expected_sha256 = "…"): a hash, not a key
        if kind in _ENTROPY_KINDS and not _SECRET_WORDS.search(line):
            # A random-looking string alone is an ETag, a hash, test data: in code, a secret is
            # one the line names (api_key = "…", token=…); provider formats have their own rules.
            return True
        if (
            heuristic.is_sequential_string(secret)
            or heuristic.is_potential_uuid(secret)
            or heuristic.is_likely_id_string(secret, line, plugin)  # type: ignore[arg-type]
            or heuristic.is_templated_secret(secret)
            or heuristic.is_prefixed_with_dollar_sign(secret)
            or heuristic.is_indirect_reference(line)
            or heuristic.is_not_alphanumeric_string(secret)
        ):
            return True
        if "pragma" in line or (i > 0 and "pragma" in lines[i - 1]):
            snippet = get_code_snippet([ln.rstrip("\r\n") for ln in lines], i + 1)
            if is_line_allowlisted("file.py", line, snippet):
                return True
        return any(p.search(secret) for p in self._allow)

    def scan(self, lines: Sequence[str], filename: str = "file.py") -> list[tuple[int, str, str]]:
        """``(line, kind, value)`` of every secret found, by line then plugin order."""
        if not lines:
            return []
        starts = [0, *itertools.accumulate(map(len, lines))]
        text = "".join(lines)
        plugins = self._load()
        found: list[tuple[int, str, str]] = []
        for i, ks in sorted(self._candidates(text, lines, starts).items()):
            line = lines[i].rstrip("\r\n")
            # A very long line (generated data) is read in overlapping windows: some plugins'
            # patterns cost more than linear time in the length of a line.
            windows = [line[w : w + _WINDOW + _OVERLAP] for w in range(0, max(len(line) - _OVERLAP, 1), _WINDOW)]
            for k in sorted(ks):
                _, plugin, _ = plugins[k]
                kept = sorted(
                    {
                        s.secret_value
                        for part in windows
                        for s in plugin.analyze_line(filename=filename, line=part, line_number=i + 1)  # type: ignore[attr-defined]
                        if s.secret_value and not self._allowed(s.secret_value, part, plugin, lines, i)
                    }
                )
                if not kept:
                    continue
                kind = plugin.secret_type  # type: ignore[attr-defined]
                for value in _match_texts(plugin, line, kept) if hasattr(plugin, "denylist") else kept:
                    found.append((i, kind, value))
        return found

    # -- masking ---------------------------------------------------------------------------

    def mask_lines(self, lines: Sequence[str], filename: str = "file.py") -> tuple[list[str], list[tuple[int, str]]]:
        """Masked copies of ``lines`` (same count, same line endings) and ``(line, kind)`` of
        every secret masked."""
        out = list(lines)
        found = self.scan(lines, filename)
        if not found:
            return out, []
        masked: list[tuple[int, str]] = []
        keys = [(i, kind) for i, kind, value in found if kind == "Private Key"]
        done_lines: set[int] = set()
        for i, kind in keys:
            if i in done_lines:
                continue
            span = _mask_key_block(out, i)
            if span:
                done_lines.update(span)
                masked.append((i, kind))
        by_line: dict[int, list[tuple[int, str, str]]] = {}
        for order, (i, kind, value) in enumerate(found):
            if kind != "Private Key" and i not in done_lines:
                by_line.setdefault(i, []).append((order, kind, value))
        for i, entries in sorted(by_line.items()):
            out[i], kinds = _mask_values(out[i], entries)
            masked.extend((i, k) for k in kinds)
        masked.sort()
        return out, masked

    def mask(self, text: str, filename: str = "file.md") -> Masked:
        """Mask a whole text (a capsule, an instruction file)."""
        if not text:
            return Masked(text)
        lines = text.splitlines(keepends=True)
        new, findings = self.mask_lines(lines, filename)
        return Masked("".join(new) if findings else text, tuple(findings))


def _match_texts(plugin: object, line: str, values: list[str]) -> list[str]:
    """What to mask for a regex plugin's findings on a line. detect-secrets reports a
    pattern's groups when it has some: the secret itself after a name (``aws_key = "…"``,
    ``://user:…@``), but for some patterns a mere prefix (``ghp`` of a GitHub token). So each
    match that produced a kept value masks its group when the group ends the match (give or
    take a closing quote), else the whole match."""
    out: list[str] = []
    for regex in plugin.denylist:  # type: ignore[attr-defined]
        for m in regex.finditer(line):
            groups = [k for k in range(1, (regex.groups or 0) + 1) if m.group(k)]
            texts = [m.group(k) for k in groups] or [m.group(0)]
            if not any(t in values for t in texts):
                continue
            tail = [k for k in groups if m.end(0) - m.end(k) <= 1]
            out.extend(m.group(k) for k in tail) if tail else out.append(m.group(0))
    return sorted(set(out)) or values


def _find_all(hay: str, needle: str) -> list[int]:
    out = []
    i = hay.find(needle)
    while i >= 0:
        out.append(i)
        i = hay.find(needle, i + len(needle))
    return out


def _mask_values(line: str, entries: list[tuple[int, str, str]]) -> tuple[str, list[str]]:
    """Replace the spans of ``entries`` (order, kind, value) in one line; overlapping spans are
    merged and named after their most specific finder. Quotes and backslashes stay."""
    spans: list[tuple[int, int, int, str]] = []  # start, end, order, kind
    for order, kind, value in entries:
        quoted = [at + 1 for q in "\"'`" for at in _find_all(line, q + value + q)]
        starts = quoted or _find_all(line, value)
        spans.extend((s, s + len(value), order, kind) for s in starts)
    if not spans:
        return line, []
    spans.sort()
    merged: list[list] = []
    for start, end, order, kind in spans:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            if order < last[2]:
                last[2], last[3] = order, kind
        else:
            merged.append([start, end, order, kind])
    parts: list[str] = []
    kinds: list[str] = []
    cur = 0
    for start, end, _, kind in merged:
        parts.append(line[cur:start])
        parts.append(_replace_keeping_quotes(line[start:end], PLACEHOLDER.format(kind)))
        kinds.append(kind)
        cur = end
    parts.append(line[cur:])
    return "".join(parts), kinds


def _replace_keeping_quotes(value: str, placeholder: str) -> str:
    """``value`` with its quote and backslash characters kept, everything else replaced by
    one ``placeholder`` (a string literal stays a string literal)."""
    pieces = _QUOTES_AND_ESCAPES.split(value)
    seps = _QUOTES_AND_ESCAPES.findall(value)
    out = []
    put = False
    for k, piece in enumerate(pieces):
        if piece and not put:
            out.append(placeholder)
            put = True
        if k < len(seps):
            out.append(seps[k])
    return "".join(out) if put else value


def _keyish_end(line: str, lo: int, hi: int) -> int:
    """Where the key material (with quotes, escapes and separators) that starts at ``lo``
    ends, at most ``hi``."""
    return _KEY_TEXT.match(line, lo, hi).end()  # type: ignore[union-attr]  # it matches the empty string


def _mask_key_block(lines: list[str], first: int) -> list[int]:
    """Remove the key material of the private key block that starts on line ``first`` (in
    place): from the BEGIN marker to the END marker, or while lines look like key material.
    Header lines (``Proc-Type: ...``) stay. A block without a run of key characters long
    enough to be a key (a mere mention of the marker) is left alone. Returns the lines
    changed."""
    begin = _KEY_BEGIN.search(lines[first])
    if begin is None:
        return []
    region: list[tuple[int, int, int]] = []  # (line, lo, hi)
    for i in range(first, min(len(lines), first + _MAX_KEY_LINES)):
        line = lines[i]
        lo = begin.end() if i == first else 0
        end = _KEY_END.search(line, lo)
        hi = end.start() if end else len(line)
        stop = _keyish_end(line, lo, hi)
        if stop < hi:  # something else than key material on the line
            if i == first:  # the key in a one-line literal, then code (or a summary's "…")
                region.append((i, lo, stop))
                break
            if _KEY_HEADER.match(line) and end is None:
                continue
            break
        region.append((i, lo, hi))
        if end is not None:
            break
    if not any(_KEY_LONG_RUN.search(lines[i], lo, hi) for i, lo, hi in region):
        return []
    placed = False

    def repl(m: re.Match[str]) -> str:
        nonlocal placed
        if m.group(1):
            return m.group(1)
        if not placed:
            placed = True
            return PLACEHOLDER.format("Private Key")
        return ""

    changed: list[int] = []
    for i, lo, hi in region:
        line = lines[i]
        body = _KEY_MATERIAL.sub(repl, line[lo:hi])
        if body != line[lo:hi]:
            lines[i] = line[:lo] + body + line[hi:]
            changed.append(i)
    return changed


DEFAULT_MASKER = SecretMasker()  # every detector, no allowlist: the default configuration
