"""A request's text read the way an engineer reads a bug report: what the user wrote, apart from
what the issue template, the version list, pasted output and links put around it (pure, no
index; docs/retrieval.md, "Bug reports").

A bug report as users file it is long: a title and a few sentences, a snippet that shows the
problem, a traceback, expected and actual output, a list of versions and, often, the issue
template's own instructions left in (``<!-- Please paste … -->``). ``signals.read`` reads the
request through these:

- ``clean``: the text without the template's comments, images and HTML image tags, the
  versions section (``#### Versions``, ``**Versions:**``, ``## Environment``) and version lines
  elsewhere (``pydicom 1.3.0``, ``[GCC 7.3.0]``), and the commands that print versions (the
  template's ``python -c "import pydicom; print(pydicom.__version__)"``, a heading that quotes
  it: ``_VERSION_READ``); the title always stays. Every signal is read from it.
- ``output_spans``: fenced blocks of pasted output (no line of code, no error or trace line of
  any language): values, not words of the code. The search does not read them.
- ``for_search``: the search's text without links' addresses, byte escapes and memory
  addresses (the exact signals read those first: a link may name a function).

The traceback, paths, dotted names, the error and quoted code are ``signals``'; which terms of a
long request are searched, and how they weigh, is ``index.terms.weighted_terms``.
"""

from __future__ import annotations

import re

# The issue template's own text, invisible in the rendered issue: ``<!-- Please paste … -->``
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
# Images and links: a screenshot's address, a link's URL (its words name a host, not code), an
# HTML image or link tag (``<img width="248" alt="Screen Shot …" src=…>``)
_IMAGE = re.compile(r"!\[[^\]\n]*\]\([^)\s]*\)")
_TAG = re.compile(r"</?(?:img|a|details|summary|br|p|div|sub|sup|kbd)\b[^>\n]*>", re.I)
_URL = re.compile(r"\b(?:https?|ftp)://[^\s)>\]]+")  # not ``file://``: V8 prints frames so
# Values in pasted output: byte escapes (``\x1b``) and addresses (``0x7f3a…``) name nothing in
# the code (frames hold addresses too: ``for_search`` is for the search's text)
_ESCAPE = re.compile(r"\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\b0x[0-9a-fA-F]+\b")
# A version line (``pydicom 1.3.0``, ``numpy: 1.19.2``, ``Linux-4.15.0-55-generic-x86_64``): a
# line with a version number and few other words; a sentence that names a version stays
_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+|\.x|[a-z]+\d*)*(?![\w.])")
MAX_VERSION_LINE = 2  # words beside the version number (``[GCC 7.3.0]``, ``sqlfluff, version 0.9.0``)
# A command that prints what is installed, as issue templates ask for it: ``print(pydicom.__version__)``,
# ``print(__pkginfo__.version)``, ``sys.version``, ``platform.platform()``. Its names are not what is
# wrong: read as a dotted name, ``__pkginfo__.version`` was among the first three hits of 8 of 15 astroid reports
_VERSION_READ = re.compile(
    r"(?:\b__version(?:_info)?__\b|\b__pkginfo__\.\w+|\bsys\.version(?:_info)?\b|\bplatform\.platform\(\))"
)
# ... on a line of code, a command or a template's heading or list item, not in a sentence
_COMMAND_LINE = re.compile(r"^[ \t]*(?:>>>|\$|❯|#|[-*+] |`|python|py |import |from \w)|\bprint\(")


# The section of a report that lists versions (``#### Versions``, ``**Versions:**``,
# ``## Environment``): through the next heading or paragraph of prose, what is installed, not
# what is wrong
_VERSIONS_SECTION = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*|\*\*|__)?(?:installed |package |library |software )?(?:versions?|environment)"
    r"(?: info(?:rmation)?)?[ \t]*:?(?:\*\*|__)?[ \t]*:?[ \t]*\n.*?"
    r"(?=^[ \t]*(?:#{1,6}[ \t]|\*\*[^*\n]+\*\*[ \t]*:?[ \t]*$)|^[ \t]*\n[ \t]*[A-Za-z]|\Z)",
    re.I | re.M | re.S,
)


def clean(text: str) -> str:
    """``text`` without the parts that say nothing about the project's code (see the module's
    docstring); line ends are kept, so line-based formats (tracebacks) still read."""
    if "<!--" in text:
        text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    if "](" in text:
        text = _IMAGE.sub(" ", text)
    if "<" in text:
        text = _TAG.sub(" ", text)
    title, nl, body = text.partition("\n")  # a title that names a version ("Bump numpy to 1.19") stays
    if "ersion" in body or "nvironment" in body:
        body = _VERSIONS_SECTION.sub(lambda m: "\n" * m.group(0).count("\n"), body)
    return title + nl + "\n".join(_without_versions(line) for line in body.split("\n"))


def for_search(text: str) -> str:
    """``text`` without links' addresses, byte escapes and memory addresses: words to a search
    (``x1b``, ``github``, ``blob``), values to the user. The exact signals read them first: a
    link to ``docs.rs/…/tokio::spawn`` names a function."""
    if "://" in text:
        text = _URL.sub(" ", text)
    return _ESCAPE.sub(" ", text) if "\\" in text or "0x" in text else text


def _without_versions(line: str) -> str:
    maybe = "version" in line or "platform" in line or "pkginfo" in line  # cheap before the regexes
    if maybe and _VERSION_READ.search(line) and _COMMAND_LINE.search(line):
        return ""
    if not _VERSION.search(line):
        return line
    return "" if len(_VERSION.sub(" ", line).split()) <= MAX_VERSION_LINE else line


# A fenced block (```lang … ```), as GitHub, GitLab and most chat clients write one
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(?P<body>.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.S | re.M)
# A line of code in a pasted block: an import, a definition, an assignment, a call, a prompt
_CODE_LINE = re.compile(
    r"^[ \t]*(?:>>> |\.\.\. |\$ |import \w|from [\w.]+ import |def \w|class \w|@\w"
    r"|[A-Za-z_][\w.\[\]'\"]*[ \t]*(?:[-+*/|&]?=(?!=)|\())",
    re.M,
)
# A line of an error or a trace, in the languages ``signals`` reads: ``KeyError: 'x'``,
# ``Traceback (most recent call last):``, a Python, V8 or Java frame, a Rust or Go panic, a
# compiler's ``error[E0382]:``, a sanitizer's report
_ERROR_LINE = re.compile(
    r"^[ \t]*(?:Traceback \(|File \"|at \S|panic: |thread '|goroutine \d|error(?:\[\w+\])?: |#\d+ |==\d+==ERROR"
    r"|[\w.$]*(?:Error|Exception|Warning)\b)",
    re.M,
)


def without_blocks(text: str) -> str:
    """``text`` with its fenced blocks left out: what the user wrote around the code and output
    they pasted."""
    if "```" not in text and "~~~" not in text:
        return text
    return _FENCE.sub(" ", text)


def output_spans(text: str) -> list[tuple[int, int]]:
    """The fenced blocks of ``text`` that hold output, not code: results, printed values, logs
    (no line of code and no error in them). Their words are values the code does not hold."""
    if "```" not in text and "~~~" not in text:
        return []
    out = []
    for m in _FENCE.finditer(text):
        body = m["body"]
        if not _CODE_LINE.search(body) and not _ERROR_LINE.search(body):
            out.append(m.span())
    return out
