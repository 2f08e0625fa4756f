"""In-memory fakes for API-level tests: a MemoryStore, an IdentityStore, and a harness
around the Flask app.

FakeStore follows the store contract (validity, filters, supersessions, assign-once
node classes, scope confinement, the scope registry) closely enough to drive
the HTTP layer; FakeIdentityStore follows the identity port. The real adapters
are proven by the contract suites, not by these fakes.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import flask
from pydantic import BaseModel

from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.api.app import create_app
from jennah.api.routes import ALL_ROUTES, Route
from jennah.bootstrap import Container
from jennah.domain import rules
from jennah.domain.access import ApiKey, Enterprise, Role, RoleBinding, User
from jennah.domain.models import (
    CommitPlan,
    CommitResult,
    Direction,
    ExecutionLogStep,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MetadataFilter,
    ScopeRecord,
    ScopeRef,
    ScoredRecord,
    Status,
)
from jennah.domain.vocabulary import Declaration, Vocabulary
from jennah.errors import AlreadyExists, NotFound
from jennah.ports.id_token import IdTokenVerifier
from jennah.services.access import hash_secret, user_token
from jennah.settings import Settings

ENTERPRISE = "local"
ROOT = "user:root"
ROOT_SECRET = "0123456789abcdef" * 4
TOKEN = user_token(ENTERPRISE, ROOT, ROOT_SECRET)  # the local root's development credential


@dataclass
class _Tables:
    chunks: dict[tuple[ScopeRef, str], MemoryRecord] = field(default_factory=dict)
    nodes: dict[tuple[ScopeRef, str], GraphNode] = field(default_factory=dict)
    edges: dict[tuple[ScopeRef, str], GraphEdge] = field(default_factory=dict)
    steps: dict[tuple[ScopeRef, str], ExecutionLogStep] = field(default_factory=dict)
    scopes: dict[ScopeRef, ScopeRecord] = field(default_factory=dict)

    def scoped(self) -> list[dict[Any, Any]]:
        """The tables whose keys start with the scope."""
        return [self.chunks, self.nodes, self.edges, self.steps]


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
            if plan.registration is not None and plan.scope not in staged.scopes:
                registered = plan.registration.model_copy(update={"scope": plan.scope})
                registered.created_at = registered.created_at or stamp
                staged.scopes[plan.scope] = registered
            self._write(staged, plan, stamp)
            chunk_closed = self._supersede(staged.chunks, plan.scope, plan.chunk_supersessions)
            edge_closed = self._supersede(staged.edges, plan.scope, plan.edge_supersessions)
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
    def _supersede(
        table: dict[tuple[ScopeRef, str], Any], scope: ScopeRef, supersessions: Any
    ) -> int:
        applied = 0
        for supersession in supersessions:
            row = table.get((scope, supersession.target_id))
            if row is None:
                raise NotFound(
                    f"{supersession.target_id} does not exist in this scope",
                    metadata={"id": supersession.target_id},
                )
            if rules.check_supersession(
                supersession.target_id,
                row.valid_at,
                row.invalid_at,
                row.superseded_by,
                supersession.invalid_at,
                supersession.superseded_by,
            ):
                update: dict[str, Any] = {
                    "invalid_at": supersession.invalid_at,
                    "superseded_by": supersession.superseded_by,
                }
                if isinstance(row, MemoryRecord):
                    update["status"] = Status.SUPERSEDED
                table[(scope, supersession.target_id)] = row.model_copy(update=update)
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

    # the scope registry

    def get_scope(self, scope: ScopeRef) -> ScopeRecord | None:
        return self._tables.scopes.get(scope)

    def list_scopes(
        self, enterprise_id: str, after: str | None = None, limit: int | None = None
    ) -> list[ScopeRecord]:
        found = [r for s, r in self._tables.scopes.items() if s.enterprise_id == enterprise_id]
        ordered = sorted(found, key=lambda r: r.scope.scope_id)
        return _page(ordered, lambda r: r.scope.scope_id, after, limit)

    def destroy_scope(self, scope: ScopeRef) -> int:
        with self._lock:
            erased = int(self._tables.scopes.pop(scope, None) is not None)
            for table in self._tables.scoped():
                for key in [k for k in table if k[0] == scope]:
                    del table[key]
                    erased += 1
            return erased

    def snapshot(self, enterprise_id: str | None = None) -> dict[str, Any]:
        """Every row (of one enterprise when given), comparable with ==."""

        def mine(scope: ScopeRef) -> bool:
            return enterprise_id is None or scope.enterprise_id == enterprise_id

        tables = self._tables
        rows: dict[str, Any] = {
            "scopes": {s: r.model_dump() for s, r in tables.scopes.items() if mine(s)}
        }
        for name in ("chunks", "nodes", "edges", "steps"):
            table: dict[tuple[ScopeRef, str], BaseModel] = getattr(tables, name)
            rows[name] = {k: v.model_dump() for k, v in table.items() if mine(k[0])}
        return rows

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


class FakeIdentityStore:
    """IdentityStore in memory."""

    def __init__(self) -> None:
        self.enterprises: dict[str, Enterprise] = {}
        self.users: dict[tuple[str, str], User] = {}
        self.keys: dict[str, ApiKey] = {}
        self.bindings: dict[tuple[str, str, Role], RoleBinding] = {}

    def create_enterprise(
        self,
        enterprise: Enterprise,
        users: Sequence[User] = (),
        bindings: Sequence[RoleBinding] = (),
    ) -> None:
        if enterprise.enterprise_id in self.enterprises:
            raise AlreadyExists(f"enterprise {enterprise.enterprise_id!r} already exists")
        self.enterprises[enterprise.enterprise_id] = enterprise.model_copy()
        for user in users:
            self.put_user(user)
        for binding in bindings:
            self.put_binding(binding)

    def delete_enterprise(self, enterprise_id: str) -> None:
        self.enterprises.pop(enterprise_id, None)
        self.users = {k: v for k, v in self.users.items() if v.enterprise_id != enterprise_id}
        self.keys = {k: v for k, v in self.keys.items() if v.enterprise_id != enterprise_id}
        self.bindings = {k: v for k, v in self.bindings.items() if v.enterprise_id != enterprise_id}

    def get_enterprise(self, enterprise_id: str) -> Enterprise | None:
        return self.enterprises.get(enterprise_id)

    def put_user(self, user: User) -> None:
        self.users[(user.enterprise_id, user.principal)] = user.model_copy()

    def get_user(self, enterprise_id: str, principal: str) -> User | None:
        return self.users.get((enterprise_id, principal))

    def find_users(self, principal: str) -> list[User]:
        return [user for (_, p), user in sorted(self.users.items()) if p == principal]

    def create_api_key(self, key: ApiKey) -> None:
        if key.key_id in self.keys:
            raise AlreadyExists(f"API key {key.key_id!r} already exists")
        self.keys[key.key_id] = key.model_copy()

    def get_api_key(self, key_id: str) -> ApiKey | None:
        return self.keys.get(key_id)

    def list_api_keys(
        self, enterprise_id: str, after: str | None = None, limit: int | None = None
    ) -> list[ApiKey]:
        ordered = sorted(
            (k for k in self.keys.values() if k.enterprise_id == enterprise_id),
            key=lambda k: k.key_id,
        )
        return _page(ordered, lambda k: k.key_id, after, limit)

    def revoke_api_key(self, enterprise_id: str, key_id: str, at: datetime) -> ApiKey | None:
        key = self.keys.get(key_id)
        if key is None or key.enterprise_id != enterprise_id:
            return None
        if key.revoked_at is None:
            key = key.model_copy(update={"revoked_at": at})
            self.keys[key_id] = key
        return key

    def put_binding(self, binding: RoleBinding) -> None:
        self.bindings[(binding.enterprise_id, binding.principal, binding.role)] = binding

    def delete_binding(self, enterprise_id: str, principal: str, role: Role) -> bool:
        return self.bindings.pop((enterprise_id, principal, role), None) is not None

    def list_bindings(
        self,
        enterprise_id: str,
        principal: str | None = None,
        after: tuple[str, str] | None = None,
        limit: int | None = None,
    ) -> list[RoleBinding]:
        found = [
            b
            for (e, p, _), b in self.bindings.items()
            if e == enterprise_id and (principal is None or p == principal)
        ]
        ordered = sorted(found, key=lambda b: (b.principal, b.role.value))
        return _page(ordered, lambda b: (b.principal, b.role.value), after, limit)

    def snapshot(self, enterprise_id: str | None = None) -> dict[str, Any]:
        """Every document (of one enterprise when given), comparable with ==."""

        def mine(owner: str) -> bool:
            return enterprise_id is None or owner == enterprise_id

        return {
            "enterprises": {k: v.model_dump() for k, v in self.enterprises.items() if mine(k)},
            "users": {k: v.model_dump() for k, v in self.users.items() if mine(v.enterprise_id)},
            "keys": {k: v.model_dump() for k, v in self.keys.items() if mine(v.enterprise_id)},
            "bindings": {k: v.model_dump() for k, v in self.bindings.items() if mine(k[0])},
        }


class FakeVocabularyStore:
    """VocabularyStore in memory: one declaration per (enterprise, scope id or None)."""

    def __init__(self) -> None:
        self.levels: dict[tuple[str, str | None], Declaration] = {}

    def get(self, enterprise_id: str, scope_id: str | None) -> Declaration | None:
        return self.levels.get((enterprise_id, scope_id))

    def put(self, enterprise_id: str, scope_id: str | None, vocabulary: Vocabulary) -> Declaration:
        declaration = Declaration(vocabulary=vocabulary, update_time=datetime.now(UTC))
        self.levels[(enterprise_id, scope_id)] = declaration
        return declaration

    def delete(self, enterprise_id: str, scope_id: str | None) -> bool:
        return self.levels.pop((enterprise_id, scope_id), None) is not None

    def delete_scope(self, enterprise_id: str, scope_id: str) -> None:
        self.levels.pop((enterprise_id, scope_id), None)

    def snapshot(self, enterprise_id: str | None = None) -> dict[str, Any]:
        """Every declaration (of one enterprise when given), comparable with ==."""
        return {
            key: declaration.model_dump()
            for key, declaration in self.levels.items()
            if enterprise_id is None or key[0] == enterprise_id
        }


def _page(
    ordered: list[Any], key: Callable[[Any], Any], after: Any, limit: int | None
) -> list[Any]:
    """A page of an ordered list, as the stores answer one: after `after`, up to `limit`."""
    rest = [item for item in ordered if after is None or key(item) > after]
    return rest if limit is None else rest[:limit]


def add_enterprise(
    identity: FakeIdentityStore | Any, enterprise_id: str, root: str, secret: str
) -> str:
    """An enterprise whose root user has a known development credential; the token."""
    identity.create_enterprise(Enterprise(enterprise_id=enterprise_id))
    identity.put_user(
        User(enterprise_id=enterprise_id, principal=root, token_hash=hash_secret(secret))
    )
    identity.put_binding(RoleBinding(enterprise_id=enterprise_id, principal=root, role=Role.ROOT))
    return user_token(enterprise_id, root, secret)


# the HTTP harness


def make_container(
    tmp_path: Path,
    store: FakeStore | None = None,
    identity: FakeIdentityStore | None = None,
    verifier: IdTokenVerifier | None = None,
    vocabularies: FakeVocabularyStore | None = None,
) -> Container:
    """A container on fakes: FakeStore, FakeIdentityStore (enterprise "local" with the
    root user's credential TOKEN), FakeVocabularyStore and the HashingEmbedder."""
    if identity is None:
        identity = FakeIdentityStore()
        add_enterprise(identity, ENTERPRISE, ROOT, ROOT_SECRET)
    return Container(
        Settings(data_dir=tmp_path, store="sqlite", embedder="hashing"),
        store=store or FakeStore(),
        identity=identity,
        vocabularies=vocabularies or FakeVocabularyStore(),
        embedder=HashingEmbedder(),
        verifier=verifier,
    )


@dataclass
class Api:
    """The Flask test client of an app on fakes, with the root's bearer token preset."""

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

    @property
    def identity(self) -> FakeIdentityStore:
        identity = self.container.identity
        assert isinstance(identity, FakeIdentityStore)
        return identity

    @property
    def vocabularies(self) -> FakeVocabularyStore:
        vocabularies = self.container.vocabularies
        assert isinstance(vocabularies, FakeVocabularyStore)
        return vocabularies

    def put(self, path: str, body: Any = None, token: str | None = TOKEN, **params: str) -> Any:
        body = {} if body is None else body
        data = body if isinstance(body, str | bytes) else flask.json.dumps(body)
        return self.app.test_client().put(
            path, data=data, query_string=params, headers=_auth(token),
            content_type="application/json",
        )  # fmt: skip

    def post(self, path: str, body: Any = None, token: str | None = TOKEN) -> Any:
        body = {} if body is None else body
        data = body if isinstance(body, str | bytes) else flask.json.dumps(body)
        return self.app.test_client().post(
            path, data=data, headers=_auth(token), content_type="application/json"
        )

    def get(self, path: str, token: str | None = TOKEN, **params: str) -> Any:
        return self.app.test_client().get(path, query_string=params, headers=_auth(token))

    def delete(self, path: str, token: str | None = TOKEN, **params: str) -> Any:
        return self.app.test_client().delete(path, query_string=params, headers=_auth(token))


def _auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}
