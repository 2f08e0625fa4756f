"""Keyed memory over HTTP: the handlers of …/keyedMemories (their wire shapes are in
`jennah.api.dto`, which a client imports without the services).

Routes (in `jennah.api.routes`, KEYED_ROUTES) exist on /v1/agents/{agentInstanceId} and
/v1/scopes/{scopeId}. Each handler makes one call to `jennah.services.keyed`; bounds are
checked there (400 naming the field).
"""

from __future__ import annotations

from jennah.api import dto
from jennah.api.handlers import Call, Reply, paging
from jennah.domain.keyed import KeyedMemory
from jennah.services import keyed

# The wire shapes live in dto (a client imports them without the services).
RememberRequest = dto.RememberRequest
LinkRequest = dto.LinkRequest
RecallRequest = dto.RecallRequest
SearchRequest = dto.SearchKeyedMemoriesRequest
KeyedMemoryParams = dto.KeyedMemoryParams
KeyedMemoryResource = dto.KeyedMemoryResource
ListKeyedMemoriesResponse = dto.ListKeyedMemoriesResponse
SearchHit = dto.SearchHit
SearchKeyedMemoriesResponse = dto.SearchKeyedMemoriesResponse
RecalledMemory = dto.RecalledMemory
RecallResponse = dto.RecallResponse


# handlers


def remember(call: Call) -> Reply:
    request: RememberRequest = call.request
    entry = keyed.remember(
        call.services.store,
        call.scope.ref,
        call.path["key"],
        request.content,
        request.expected_version,
        registration=call.scope.registration,
    )
    return Reply(resource(entry))


def get(call: Call) -> Reply:
    return Reply(resource(keyed.get(call.services.store, call.scope.ref, call.path["key"])))


def list_(call: Call) -> Reply:
    page = keyed.list_page(call.services.store, call.scope.ref, paging(call), call.caller.principal)
    return Reply(
        ListKeyedMemoriesResponse(
            keyed_memories=[resource(entry) for entry in page.items],
            next_page_token=page.next_page_token,
        )
    )


def forget(call: Call) -> Reply:
    keyed.forget(call.services.store, call.scope.ref, call.path["key"])
    return Reply({})


def link(call: Call) -> Reply:
    request: LinkRequest = call.request
    entry = keyed.link(call.services.store, call.scope.ref, call.path["key"], request.target)
    return Reply(resource(entry))


def unlink(call: Call) -> Reply:
    request: LinkRequest = call.request
    entry = keyed.unlink(call.services.store, call.scope.ref, call.path["key"], request.target)
    return Reply(resource(entry))


def recall(call: Call) -> Reply:
    request: RecallRequest = call.request
    result = keyed.recall(
        call.services.store,
        call.scope.ref,
        request.request,
        request.token_budget,
        call.services.recall_judge,
    )
    return Reply(
        RecallResponse(
            memories=[
                RecalledMemory(
                    key=r.entry.key, content=r.entry.content, version=r.entry.version,
                    via=r.via.value,
                )
                for r in result.memories
            ],
            token_count=result.token_count,
        )
    )  # fmt: skip


def search(call: Call) -> Reply:
    request: SearchRequest = call.request
    page = keyed.search(
        call.services.store,
        call.scope.ref,
        request.query,
        paging(call),
        call.caller.principal,
    )
    return Reply(
        SearchKeyedMemoriesResponse(
            results=[
                SearchHit(
                    key=m.entry.key, content=m.entry.content, version=m.entry.version,
                    update_time=m.entry.update_time, matched_words=m.score,
                )
                for m in page.items
            ],
            next_page_token=page.next_page_token,
        )
    )  # fmt: skip


def resource(entry: KeyedMemory) -> KeyedMemoryResource:
    return KeyedMemoryResource(
        key=entry.key,
        content=entry.content,
        version=entry.version,
        links=entry.links,
        create_time=entry.create_time,
        update_time=entry.update_time,
    )
