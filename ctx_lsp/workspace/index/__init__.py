"""The workspace symbol index: SQLite (WAL) with an FTS5 table for lexical (BM25) search, and a
reference graph ranked by PageRank.

``WorkspaceIndex`` (``facade``) is what the rest of ctx_lsp uses. Its parts, each a set of
functions over the shared ``IndexDb``:

- ``db``: the database — location, schema, connections, corrupt-cache recovery, and the one
  mapping between a ``symbols`` row and an ``IndexedSymbol``;
- ``terms``: search terms (identifier splitting; what the FTS table stores and a query asks);
- ``texts``: a big symbol's card, docstring and body, compressed together, and their cache;
- ``prepare``: one file read, hashed, masked, parsed and token-counted, with no database
  access (the process pool's workers run it);
- ``build``: ``refresh`` (walk, pool, batches) and the batch writer every change goes through;
- ``updates``: one file re-indexed from an editor buffer or disk, or removed;
- ``refgraph``: references resolved to symbols, centrality, neighbours;
- ``search``: BM25 search with the fields each hit matched in;
- ``memo``: what plans read, kept in memory while the database is unchanged;
- ``names``: what a dotted name refers to, through imports and re-exports;
- ``lookups``: stored symbols by qualname, file or line, and the index's totals.
"""

from ctx_lsp.workspace.index.build import BATCH_FILES, POOL_MIN_FILES, POOL_PROCESSES, IndexStats
from ctx_lsp.workspace.index.db import SCHEMA_VERSION, IndexedSymbol, RefreshStopped, SymbolHead, masking_key
from ctx_lsp.workspace.index.facade import WorkspaceIndex
from ctx_lsp.workspace.index.lookups import IndexSummary
from ctx_lsp.workspace.index.search import FTS_WEIGHTS, SearchHit
from ctx_lsp.workspace.index.terms import (
    FTS_COLUMNS,
    LONG_REQUEST_TERMS,
    MAX_QUERY_TERMS,
    code_words,
    coverage_terms,
    query_names,
    query_term_words,
    query_terms,
    search_terms,
    split_identifier,
)
from ctx_lsp.workspace.index.updates import COUNT_CACHE_TEXTS

__all__ = [
    "BATCH_FILES",
    "COUNT_CACHE_TEXTS",
    "FTS_COLUMNS",
    "FTS_WEIGHTS",
    "LONG_REQUEST_TERMS",
    "MAX_QUERY_TERMS",
    "POOL_MIN_FILES",
    "POOL_PROCESSES",
    "SCHEMA_VERSION",
    "IndexStats",
    "IndexSummary",
    "IndexedSymbol",
    "RefreshStopped",
    "SearchHit",
    "SymbolHead",
    "WorkspaceIndex",
    "code_words",
    "coverage_terms",
    "masking_key",
    "query_names",
    "query_term_words",
    "query_terms",
    "search_terms",
    "split_identifier",
]
