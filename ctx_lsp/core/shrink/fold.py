"""Runs of similar lines folded to the first, the last and a count — the shape of a log without
its repetition. Lines are similar when they are equal once digits, hex ids and quoted values are
blanked."""

from __future__ import annotations

import re

_NOISE = re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-f]{7,}\b|\d+(\.\d+)*|'[^']*'|\"[^\"]*\"")
MIN_RUN = 4


def shape(line: str) -> str:
    return _NOISE.sub("#", line.strip())


def fold(lines: list[str]) -> list[str]:
    out: list[str] = []
    n = 0
    while n < len(lines):
        end = n + 1
        key = shape(lines[n])
        while end < len(lines) and shape(lines[end]) == key:
            end += 1
        if end - n >= MIN_RUN:
            out += [lines[n], f"… {end - n - 2} similar lines …", lines[end - 1]]
        else:
            out += lines[n:end]
        n = end
    return out
