"""Keyed memory over HTTP: the wire shapes and the handlers of …/keyedMemories.

Routes (in `jennah.api.routes`, KEYED_ROUTES) exist on /v1/agents/{agentInstanceId} and
/v1/scopes/{scopeId}. Each handler makes one call to `jennah.services.keyed`; bounds are
checked there (400 naming the field).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from jennah.api.dto import Int32, Int64, PageParams, Timestamp, WireRequest, WireResponse
from jennah.api.handlers import Call, Reply, paging
from jennah.domain import keyed as rules
from jennah.domain.keyed import KeyedMemory
from jennah.services import keyed

_KEY_HELP = (
    f"Lowercase letters, digits, '-' and '_'; 1-{rules.MAX_KEY_CHARS} characters. Names the "
    "subject (harbor-status-reports), not the date"
)


class RememberRequest(WireRequest):
    """PUT …/keyedMemories/{key}: create (expectedVersion 0) or update an entry."""

    content: str = Field(
        description=f"Non-empty text, at most {rules.MAX_CONTENT_CHARS:,} characters",
        json_schema_extra={"minLength": 1, "maxLength": rules.MAX_CONTENT_CHARS,
                           "pattern": r"\S"},
    )  # fmt: skip
    expected_version: int = Field(
        description="0 creates the key (ALREADY_EXISTS when it exists); N updates only "
        "while the stored version is N, else ABORTED with reason "
        f"{rules.VERSION_MISMATCH} and currentVersion in the error details",
        json_schema_extra={"minimum": 0, "format": "int64"},
    )


class LinkRequest(WireRequest):
    """POST …/keyedMemories/{key}:link or :unlink."""

    target: str = Field(
        description=f"The other entry's key. {_KEY_HELP}",
        json_schema_extra={"pattern": rules.KEY_PATTERN.pattern},
    )


class RecallRequest(WireRequest):
    """POST …/keyedMemories:recall."""

    request: str = Field(
        description="The current request: its words (at least one that is not a stop "
        "word) are compared with keys and contents "
        f"(at most {rules.MAX_REQUEST_CHARS:,} characters)",
        json_schema_extra={"maxLength": rules.MAX_REQUEST_CHARS, "pattern": "[A-Za-z0-9]"},
    )
    token_budget: Int32 = Field(
        description=f"Tokens the answer may hold, 1-{rules.MAX_TOKEN_BUDGET:,} (the brief's "
        "WordPiece tokenizer over each entry's key and content); never exceeded",
        json_schema_extra={"minimum": 1, "maximum": rules.MAX_TOKEN_BUDGET},
    )


class SearchRequest(PageParams):
    """POST …/keyedMemories:search (read_memories): the query, and the page (pageSize,
    pageToken) in the body."""

    query: str = Field(
        description="Words to look for in keys and contents (at least one that is not a "
        f"stop word; at most {rules.MAX_REQUEST_CHARS:,} characters)",
        json_schema_extra={"maxLength": rules.MAX_REQUEST_CHARS, "pattern": "[A-Za-z0-9]"},
    )


class KeyedMemoryParams(PageParams):
    """Query parameters of GET …/keyedMemories and POST …/keyedMemories:search."""


class KeyedMemoryResource(WireResponse):
    key: str = Field(description=_KEY_HELP)
    content: str
    version: Int64 = Field(description="1 on create, one more on each update")
    links: list[str] = Field(
        default_factory=list,
        description=f"Keys of the linked entries (symmetric; at most {rules.MAX_LINKS})",
    )
    create_time: Timestamp
    update_time: Timestamp


class ListKeyedMemoriesResponse(WireResponse):
    """A page of entries, most recently updated first."""

    keyed_memories: list[KeyedMemoryResource] = Field(default_factory=list)
    next_page_token: str | None = None


class SearchHit(WireResponse):
    key: str
    content: str
    version: Int64
    update_time: Timestamp
    matched_words: Int32 = Field(description="How many distinct query words the entry holds")


class SearchKeyedMemoriesResponse(WireResponse):
    """Entries holding the query's words: most words first, then most recently updated."""

    results: list[SearchHit] = Field(default_factory=list)
    next_page_token: str | None = None


class RecalledMemory(WireResponse):
    key: str
    content: str
    version: Int64
    via: Literal["MATCH", "LINK"] = Field(
        description="MATCH: its words matched the request; LINK: linked with a match"
    )


class RecallResponse(WireResponse):
    memories: list[RecalledMemory] = Field(default_factory=list)
    token_count: Int32 = Field(description="Tokens of the memories, never over tokenBudget")


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
