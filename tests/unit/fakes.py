"""In-memory fakes for API-level tests: a MemoryStore, and a harness around the Flask app.

FakeStore follows the store contract (validity, filters, closures, assign-once
node classes, scope confinement) closely enough to drive the HTTP layer; the
real adapters are proven by the contract suite, not by this fake.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import flask

from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.api.app import create_app
from jennah.api.routes import ALL_ROUTES, Route
from jennah.auth import LocalCredentials, TokenAuthenticator
from jennah.bootstrap import Container
from jennah.domain import rules
from jennah.domain.models import (
    CommitPlan,
    CommitResult,
    Direction,
    ExecutionLogStep,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MetadataFilter,
    ScopeRef,
    ScoredRecord,
    Status,
)
from jennah.errors import NotFound
from jennah.settings import Settings

TOKEN = "test-token-0123456789"
ENTERPRISE = "local"


@dataclass
class _Tables:
    chunks: dict[tuple[ScopeRef, str], MemoryRecord] = field(default_factory=dict)
    nodes: dict[tuple[ScopeRef, str], GraphNode] = field(default_factory=dict)
    edges: dict[tuple[ScopeRef, str], GraphEdge] = field(default_factory=dict)
    steps: dict[tuple[ScopeRef, str], ExecutionLogStep] = field(default_factory=dict)


class FakeStore:
    """MemoryStore in memory: one lock stands in for the transaction."""

    def __init__(self) -> None:
        self._tables = _Tables()
        self._lock = threading.Lock()
        self._last_commit = datetime(2000, 1, 1, tzinfo=UTC)
        self.fail_next: Exception | None = None
        self.plans: list[CommitPlan] = []

    # writes

    def apply(self, plan: CommitPlan) -> CommitResult:
        with self._lock:
            if self.fail_next is not None:
                failure, self.fail_next = self.fail_next, None
                raise failure
            staged = copy.deepcopy(self._tables)
            stamp = self._commit_timestamp()
            self._write(staged, plan, stamp)
            chunk_closed = self._close(staged.chunks, plan.scope, plan.chunk_closures)
            edge_closed = self._close(staged.edges, plan.scope, plan.edge_closures)
            self._tables = staged
            self.plans.append(plan)
        return CommitResult(
            commit_timestamp=stamp,
            chunks_written=len(plan.chunks),
            nodes_written=len(plan.nodes),
            edges_written=len(plan.edges),
            chunk_supersessions=chunk_closed,
            edge_supersessions=edge_closed,
        )

    def _commit_timestamp(self) -> datetime:
        stamp = max(datetime.now(UTC), self._last_commit + timedelta(microseconds=1))
        self._last_commit = stamp
        return stamp

    def _write(self, staged: _Tables, plan: CommitPlan, stamp: datetime) -> None:
        scope = plan.scope
        for chunk in plan.chunks:
            old = staged.chunks.get((scope, chunk.id))
            new = chunk.model_copy(deep=True)
            new.created_at, new.updated_at = stamp, stamp
            if old is not None:
                keep = ("created_at", "valid_at", "invalid_at", "superseded_by", "status")
                new = new.model_copy(update={k: getattr(old, k) for k in keep})
            staged.chunks[(scope, chunk.id)] = new
        for node in plan.nodes:
            old_node = staged.nodes.get((scope, node.node_id))
            new_node = node.model_copy(deep=True, update={"updated_at": stamp})
            new_node.created_at = old_node.created_at if old_node else stamp
            if old_node is not None and old_node.node_type is not None:
                new_node.node_type = old_node.node_type
            staged.nodes[(scope, node.node_id)] = new_node
        for edge in plan.edges:
            old_edge = staged.edges.get((scope, edge.edge_id))
            new_edge = edge.model_copy(deep=True, update={"created_at": stamp})
            if old_edge is not None:
                keep_edge = ("created_at", "valid_at", "invalid_at", "superseded_by")
                new_edge = new_edge.model_copy(update={k: getattr(old_edge, k) for k in keep_edge})
            staged.edges[(scope, edge.edge_id)] = new_edge
        for step in plan.steps:
            staged.steps[(scope, step.step_id)] = step

    @staticmethod
    def _close(table: dict[tuple[ScopeRef, str], Any], scope: ScopeRef, closures: Any) -> int:
        applied = 0
        for closure in closures:
            row = table.get((scope, closure.target_id))
            if row is None:
                raise NotFound(
                    f"{closure.target_id} does not exist in this scope",
                    metadata={"id": closure.target_id},
                )
            if rules.check_closure(
                closure.target_id,
                row.valid_at,
                row.invalid_at,
                row.superseded_by,
                closure.invalid_at,
                closure.superseded_by,
            ):
                update: dict[str, Any] = {
                    "invalid_at": closure.invalid_at,
                    "superseded_by": closure.superseded_by,
                }
                if isinstance(row, MemoryRecord):
                    update["status"] = Status.SUPERSEDED
                table[(scope, closure.target_id)] = row.model_copy(update=update)
                applied += 1
        return applied

    # reads

    def search_chunks(
        self,
        scope: ScopeRef,
        vector: Sequence[float],
        top_k: int,
        filters: Sequence[MetadataFilter],
        as_of: datetime,
    ) -> list[ScoredRecord]:
        scored = [
            ScoredRecord(
                record=r, score=sum(a * b for a, b in zip(vector, r.embedding or [], strict=False))
            )
            for r in self._chunks(scope)
            if _valid(r, as_of) and all(rules.matches_filter(r.metadata, f) for f in filters)
        ]
        scored.sort(key=lambda s: (-s.score, s.record.id))
        return scored[:top_k]

    def get_chunks(self, scope: ScopeRef, ids: Sequence[str]) -> list[MemoryRecord]:
        return [r for r in self._chunks(scope) if r.id in set(ids)]

    def list_chunks(
        self, scope: ScopeRef, as_of: datetime | None, limit: int, offset: int
    ) -> list[MemoryRecord]:
        rows = [r for r in self._chunks(scope) if as_of is None or _valid(r, as_of)]
        return rows[offset : offset + limit]

    def find_nodes(
        self, scope: ScopeRef, filters: Sequence[MetadataFilter], limit: int
    ) -> list[GraphNode]:
        found = [n for n in self._nodes(scope) if all(_node_matches(n, f) for f in filters)]
        return found[:limit]

    def get_nodes(self, scope: ScopeRef, node_ids: Sequence[str]) -> list[GraphNode]:
        return [n for n in self._nodes(scope) if n.node_id in set(node_ids)]

    def edges_touching(
        self,
        scope: ScopeRef,
        node_ids: Sequence[str],
        relations: Sequence[str],
        direction: Direction,
        as_of: datetime | None,
    ) -> list[GraphEdge]:
        ids = set(node_ids)
        out = []
        for edge in self._edges(scope):
            leaves = edge.source in ids and direction in (Direction.OUTBOUND, Direction.ANY)
            enters = edge.target in ids and direction in (Direction.INBOUND, Direction.ANY)
            if not (leaves or enters) or (relations and edge.relation not in relations):
                continue
            if as_of is None or rules.is_valid_at(
                edge.valid_at, edge.invalid_at, edge.retired_at, as_of
            ):
                out.append(edge)
        return out

    def get_edges(self, scope: ScopeRef, edge_ids: Sequence[str]) -> list[GraphEdge]:
        return [e for e in self._edges(scope) if e.edge_id in set(edge_ids)]

    def get_step(self, scope: ScopeRef, step_id: str) -> ExecutionLogStep | None:
        return self._tables.steps.get((scope, step_id))

    def _chunks(self, scope: ScopeRef) -> list[MemoryRecord]:
        return sorted(
            (r for (s, _), r in self._tables.chunks.items() if s == scope), key=lambda r: r.id
        )

    def _nodes(self, scope: ScopeRef) -> list[GraphNode]:
        return sorted(
            (n for (s, _), n in self._tables.nodes.items() if s == scope), key=lambda n: n.node_id
        )

    def _edges(self, scope: ScopeRef) -> list[GraphEdge]:
        return sorted(
            (e for (s, _), e in self._tables.edges.items() if s == scope), key=lambda e: e.edge_id
        )


def _valid(record: MemoryRecord, as_of: datetime) -> bool:
    return rules.is_valid_at(record.valid_at, record.invalid_at, record.retired_at, as_of)


def _node_matches(node: GraphNode, flt: MetadataFilter) -> bool:
    values = {"NodeId": node.node_id, "Label": node.label}
    if node.node_type is not None:
        values["NodeType"] = node.node_type
    return rules.matches_filter(values, flt)


# the HTTP harness


def make_container(tmp_path: Path, store: FakeStore | None = None) -> Container:
    """A container on fakes: FakeStore, HashingEmbedder and one known bearer token."""
    return Container(
        Settings(data_dir=tmp_path, store="sqlite", embedder="hashing"),
        store=store or FakeStore(),
        embedder=HashingEmbedder(),
        authenticator=TokenAuthenticator.from_credentials(LocalCredentials(token=TOKEN)),
    )


@dataclass
class Api:
    """The Flask test client of an app on fakes, with the bearer token preset."""

    container: Container
    app: flask.Flask

    @classmethod
    def create(cls, tmp_path: Path, routes: tuple[Route, ...] = ALL_ROUTES) -> Api:
        container = make_container(tmp_path)
        return cls(container, create_app(container, routes))

    @property
    def store(self) -> FakeStore:
        store = self.container.store
        assert isinstance(store, FakeStore)
        return store

    def post(self, path: str, body: Any, token: str | None = TOKEN) -> Any:
        data = body if isinstance(body, str | bytes) else flask.json.dumps(body)
        return self.app.test_client().post(
            path, data=data, headers=_auth(token), content_type="application/json"
        )

    def get(self, path: str, token: str | None = TOKEN, **params: str) -> Any:
        return self.app.test_client().get(path, query_string=params, headers=_auth(token))


def _auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}
