"""What happened inside the engine while it served a request, for the faces to pass on: an
automatic compaction before a plan, a decision of the reflection loop at the end of a turn."""

from __future__ import annotations

from dataclasses import dataclass

from ctx_lsp.memory.compaction import Compaction
from ctx_lsp.sessions.records import Reflection


@dataclass(frozen=True, slots=True)
class Compacted:
    session: str
    compaction: Compaction


@dataclass(frozen=True, slots=True)
class Reflected:
    session: str
    reflection: Reflection


Event = Compacted | Reflected
