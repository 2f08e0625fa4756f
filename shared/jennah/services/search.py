"""memory:search: the few searchable claims closest to a message, rendered for the turn.

Turn-level retrieval and the agent's search_memory tool are this one search (design
§8-9): memory:query's hybrid search (`query.hybrid_search`: by meaning and by words with
spelling tolerance, merged) of maxItems results, each part taken from the searchable
claims only (active and unexpired: `search.searchable`), capped by the token budget and
rendered (`jennah.domain.search`). Read-only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from jennah.domain import search as rules
from jennah.domain.models import ScopeRef
from jennah.ports.embedder import Embedder
from jennah.ports.store import MemoryStore
from jennah.services.query import QueryVector, hybrid_search


@dataclass(frozen=True)
class SearchCommand:
    scope: ScopeRef
    query: str
    max_items: int = rules.DEFAULT_MAX_ITEMS
    token_budget: int = rules.DEFAULT_TOKEN_BUDGET


@dataclass(frozen=True)
class SearchResult:
    rendered: rules.Rendered
    embedding_ms: float
    search_ms: float


def search(
    command: SearchCommand,
    store: MemoryStore,
    embedder: Embedder,
    now: Callable[[], datetime],
) -> SearchResult:
    """The candidates of one search (InvalidArgument naming the field past its bound)."""
    rules.check_request(command.query, command.max_items, command.token_budget)
    instant = now()
    started = time.perf_counter()
    vector = QueryVector(embedder, command.query)
    hits = hybrid_search(
        command.scope,
        store,
        command.query,
        vector,
        command.max_items,
        instant,
        keep=lambda claim: rules.searchable(claim, instant),
    )
    rendered = rules.render(
        command.scope.scope_id,
        (hit.record for hit in hits),
        instant,
        command.max_items,
        command.token_budget,
    )
    return SearchResult(
        rendered=rendered,
        embedding_ms=vector.embedding_ms,
        search_ms=(time.perf_counter() - started) * 1000 - vector.embedding_ms,
    )
