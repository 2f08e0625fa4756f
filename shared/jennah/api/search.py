"""POST /v1/{agents|scopes}/{id}/memory:search: turn-level retrieval and search_memory.

The answer's `text` is what goes into the turn; `candidates` are the same claims as
data, and `tokenCount` is what `text` costs (never more than tokenBudget).
"""

from __future__ import annotations

from jennah.api import dto
from jennah.api.handlers import Call, Reply
from jennah.services import search as search_service


def search(call: Call) -> Reply:
    services, request = call.services, call.request
    command = search_service.SearchCommand(
        scope=call.scope.ref,
        query=request.query,
        max_items=request.max_items,
        token_budget=request.token_budget,
    )
    result = search_service.search(command, services.store, services.embedder, services.now)
    rendered = result.rendered
    response = dto.SearchResponse(
        candidates=[
            dto.SearchCandidate(
                ref=c.ref,
                summary=c.summary,
                type=c.type.value,
                age=c.age,
                sensitivity=c.sensitivity.value,
            )
            for c in rendered.candidates
        ],
        token_count=rendered.token_count,
        text=rendered.text,
    )
    timing = f"embed;dur={result.embedding_ms:.2f}, search;dur={result.search_ms:.2f}"
    return Reply(response, headers={"Server-Timing": timing})
