"""Search output (``grep -rn``, ``rg`` plain, grouped or ``--json``, ``git grep``, ``find``): the
definitions of the names the request asks about first, then the files that match the request
with their hits, counts for the rest."""

from __future__ import annotations

import re
from collections import OrderedDict

import msgspec

from ctx_lsp.core.shrink.request import NAME, PLACED, Request, Term, inside_place, score

HIT = re.compile(r"^(?P<path>[^\s:][^:]*?\.[A-Za-z0-9_]+|[^\s:]+/[^\s:]+)(?::(?P<line>\d+))?[:-](?P<text>.*)$")
PATH_ONLY = re.compile(r"^\.?/?[\w@.+-]+(/[\w@.+-]+)+/?$")
GROUPED_HIT = re.compile(r"^(\d+)[:-](?!\d)")  # not a date or a time
# A line that defines a name, in the languages we read (the name is checked after the keyword).
DEFINES = re.compile(
    r"^\s*(?:export\s+|pub(?:\([^)]*\))?\s+|public\s+|private\s+|protected\s+|static\s+|async\s+|default\s+"
    r"|abstract\s+|final\s+|unsafe\s+|extern\s+|const\s+)*"
    r"(?:def|class|fn|func|function\*?|struct|enum|trait|interface|type|impl|module|mod|macro_rules!|#define"
    r"|const|let|var|val|object|record|namespace|union)\s+(?:\([^)]*\)\s*)?(?P<name>[\w$]+)"
)
TOP_FILES = 8
HITS_PER_FILE = 12
DEFINITION = 20  # a definition of a name the request asks about outranks any use
# Tests use a name more than anything; asked where a thing is, an engineer looks at the source.
TEST_PATH = re.compile(r"(^|/)(tests?|__tests__|spec|testdata|fixtures)/|[._-](test|spec)s?\.\w+$|(^|/)test_[^/]*$")


class Hit(msgspec.Struct):
    path: str
    text: str  # the matched line's text
    raw: str  # the output's line as printed
    line: int = 0  # its line number in the file, when the output says (grep -n, rg)


def looks_like(text: str) -> bool:
    lines = [line for line in text.splitlines()[:400] if line.strip()]
    if len(lines) < 5:
        return False
    if sum(1 for line in lines if line.startswith('{"type":"')) >= 0.8 * len(lines):
        return True  # rg --json
    hits = sum(1 for line in lines if PATH_ONLY.match(line.strip()) or GROUPED_HIT.match(line) or HIT.match(line))
    return hits >= 0.8 * len(lines)


def parse(text: str) -> list[Hit]:
    """Every hit with its file, whatever the tool's layout."""
    out: list[Hit] = []
    heading = ""
    for line in text.splitlines():
        if line.startswith('{"type":"'):
            out.append(_json_hit(line))
            continue
        if not line.strip() or line == "--":
            heading = ""
            continue
        m = HIT.match(line) if ":" in line or "-" in line else None
        grouped = GROUPED_HIT.match(line) if heading else None
        if grouped:  # rg's grouped layout: the path, then its hits
            out.append(Hit(heading, line.split(":", 1)[-1] if ":" in line else line, line, int(grouped.group(1))))
        elif m:
            out.append(Hit(m.group("path"), m.group("text"), line, int(m.group("line") or 0)))
        else:
            path = line.strip()
            heading = path if PATH_ONLY.match(path) or "." in path.rsplit("/", 1)[-1] else ""
            out.append(Hit(path, "", line))
    return out


def _json_hit(line: str) -> Hit:
    try:
        record = msgspec.json.decode(line)
        data = record.get("data", {})
        path = (data.get("path") or {}).get("text", "")
        text = (data.get("lines") or {}).get("text", "")
        number = data.get("line_number") or 0
    except (msgspec.DecodeError, AttributeError):
        path, text, number = "", "", 0
    return Hit(path, text, line, number if isinstance(number, int) else 0)


def defines(text: str, terms: tuple[Term, ...]) -> int:
    """DEFINITION when the line defines a name the request gives (``parse_version``, or the
    last part of ``semver.coerce``), half of it when the name holds one (``uuidRegex`` for
    "uuid") or the definition is indented deep (a local variable, not the thing itself)."""
    m = DEFINES.match(text)
    if m is None:
        return 0
    name = m.group("name").lower()
    if any(t.text == name or (t.weight >= NAME and t.text.endswith(name)) for t in terms):
        found = DEFINITION
    elif any(len(t.text) >= 4 and t.text in name for t in terms):
        found = DEFINITION // 2
    else:
        return 0
    return found if len(text) - len(text.lstrip()) <= 4 else found // 2


def is_test(path: str) -> bool:
    return TEST_PATH.search(path) is not None


def shrink(text: str, request: Request, budget_chars: int) -> tuple[str, str]:
    hits = parse(text)
    files: OrderedDict[str, list[Hit]] = OrderedDict()
    for hit in hits:
        files.setdefault(hit.path, []).append(hit)
    terms = request.pointing([*files, *(h.text for h in hits[:: max(1, len(hits) // 2000)])])
    named = tuple(t for t in request.terms if t.weight >= NAME or re.fullmatch(r"[\w$]+", t.text))

    def rank(hit: Hit) -> int:
        inside = hit.line and any(inside_place(p, (hit.path.lower(), hit.line)) for p in request.places)
        return defines(hit.text, named) + score(hit.text.lower(), terms) + (PLACED if inside else 0)

    ranks = {path: [rank(h) for h in fh] for path, fh in files.items()}
    asks_tests = any(t.text.startswith("test") or t.text == "spec" for t in request.terms)
    file_rank = {
        path: max(ranks[path])
        + 2 * score(path.lower(), terms)
        + min(3, len(fh) // 10)
        - (DEFINITION // 2 if is_test(path) and not asks_tests else 0)
        for path, fh in files.items()
    }
    order = {path: n for n, path in enumerate(files)}
    ranked = sorted(files, key=lambda p: (-file_rank[p], order[p]))
    out = [
        f"{len(hits):,} lines in {len(files):,} files; definitions of the names asked about and the files "
        "that match the request first:"
    ]
    used = len(out[0])
    shown = 0
    for path in ranked:
        if shown >= TOP_FILES or (used > budget_chars and file_rank[path] < DEFINITION // 2):
            break
        fh = files[path]
        best = sorted(range(len(fh)), key=lambda n: (-ranks[path][n], n))[:HITS_PER_FILE]
        grouped = not fh[0].raw.startswith(path) and not fh[0].raw.startswith('{"')
        block = [path] if grouped else []
        block += [fh[n].raw for n in sorted(best)]
        if len(fh) > HITS_PER_FILE:
            block.append(f"… {len(fh) - HITS_PER_FILE} more in {path}")
        out += block
        used += sum(len(line) + 1 for line in block)
        shown += 1
    rest = ranked[shown:]
    if rest:
        out.append(f"… and {sum(len(files[p]) for p in rest):,} hits in {len(rest):,} more files:")
        listed = 0
        for p in rest:
            if used > budget_chars * 1.2 and listed >= 20:
                break
            entry = f"{p} ({len(files[p])})"
            out.append(entry)
            used += len(entry) + 1
            listed += 1
        if listed < len(rest):
            out.append(f"… {len(rest) - listed:,} more files")
    return "\n".join(out), (
        f"the definitions asked about and the hits of the {shown} files that match the request best, "
        "counts for the rest"
    )
