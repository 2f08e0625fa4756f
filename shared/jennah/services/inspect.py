"""memory:inspect: list a scope's chunks and, optionally, its graph, page by page.

Chunks valid now are listed by default, those valid at `as_of_valid` when it
is given, and every row ever written with `all_history`. With `graph`, each
page also lists nodes (ordered by node id) and the edges leaving them, valid
at the same instant, so that every edge is listed exactly once, on the page
of its source node. A page token pins the instant of the first page, so
paging is stable while writes arrive.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from datetime import datetime

from pydantic import BaseModel, Field, ValidationError

from jennah.domain.models import (
    Direction,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    ScopeRef,
)
from jennah.errors import InvalidArgument
from jennah.ports.store import MemoryStore

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000


class InspectCommand(BaseModel):
    scope: ScopeRef
    graph: bool = False
    as_of_valid: datetime | None = None
    all_history: bool = False
    page_size: int = 0
    page_token: str = ""


class InspectPage(BaseModel):
    """One page; `as_of` is the instant listed (None with all_history)."""

    chunks: list[MemoryRecord] = Field(default_factory=list)
    nodes: list[GraphNode] | None = None
    edges: list[GraphEdge] | None = None
    as_of: datetime | None = None
    next_page_token: str | None = None


class _Cursor(BaseModel):
    """What a page token carries: where the next page starts, and for which request."""

    chunk_offset: int = 0
    node_offset: int = 0
    chunks_done: bool = False
    nodes_done: bool = False
    as_of: datetime | None = None
    graph: bool = False
    all_history: bool = False


def inspect(
    command: InspectCommand, store: MemoryStore, now: Callable[[], datetime]
) -> InspectPage:
    """One page of the scope's memory, as described in the module docstring."""
    page_size = _page_size(command.page_size)
    if command.all_history and command.as_of_valid is not None:
        raise InvalidArgument("give asOfValid or allHistory, not both", field="allHistory")
    cursor = _cursor(command, now)
    page = InspectPage(as_of=cursor.as_of)
    following = cursor.model_copy()
    if not cursor.chunks_done:
        rows = store.list_chunks(command.scope, cursor.as_of, page_size + 1, cursor.chunk_offset)
        page.chunks = rows[:page_size]
        following.chunk_offset += len(page.chunks)
        following.chunks_done = len(rows) <= page_size
    if command.graph:
        _graph_page(command.scope, store, cursor, following, page, page_size)
    else:
        following.nodes_done = True
    if not (following.chunks_done and following.nodes_done):
        page.next_page_token = _encode(following)
    return page


def _graph_page(
    scope: ScopeRef,
    store: MemoryStore,
    cursor: _Cursor,
    following: _Cursor,
    page: InspectPage,
    page_size: int,
) -> None:
    page.nodes, page.edges = [], []
    if cursor.nodes_done:
        return
    found = store.find_nodes(scope, [], cursor.node_offset + page_size + 1)
    page.nodes = found[cursor.node_offset : cursor.node_offset + page_size]
    following.node_offset += len(page.nodes)
    following.nodes_done = len(found) <= cursor.node_offset + page_size
    ids = [n.node_id for n in page.nodes]
    if ids:
        on_page = set(ids)
        touching = store.edges_touching(scope, ids, [], Direction.ANY, cursor.as_of)
        page.edges = [e for e in touching if e.source in on_page]


def _page_size(requested: int) -> int:
    if requested < 0:
        raise InvalidArgument(f"pageSize must not be negative; got {requested}", field="pageSize")
    if requested == 0:
        return DEFAULT_PAGE_SIZE
    return min(requested, MAX_PAGE_SIZE)


def _cursor(command: InspectCommand, now: Callable[[], datetime]) -> _Cursor:
    if not command.page_token:
        as_of = None if command.all_history else (command.as_of_valid or now())
        return _Cursor(as_of=as_of, graph=command.graph, all_history=command.all_history)
    cursor = _decode(command.page_token)
    same_instant = command.as_of_valid is None or command.as_of_valid == cursor.as_of
    if (
        cursor.graph != command.graph
        or cursor.all_history != command.all_history
        or not same_instant
    ):
        raise InvalidArgument(
            "pageToken was issued for a request with other parameters; repeat graph, "
            "asOfValid and allHistory as they were on the first page",
            field="pageToken",
        )
    return cursor


def _encode(cursor: _Cursor) -> str:
    raw = cursor.model_dump_json(exclude_defaults=True).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode(token: str) -> _Cursor:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        cursor = _Cursor.model_validate(json.loads(raw))
    except (binascii.Error, ValueError, ValidationError):
        raise InvalidArgument(
            "pageToken is not a token this service issued", field="pageToken"
        ) from None
    if cursor.chunk_offset < 0 or cursor.node_offset < 0:
        raise InvalidArgument("pageToken is not a token this service issued", field="pageToken")
    return cursor
