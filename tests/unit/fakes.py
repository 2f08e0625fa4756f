"""The fakes of the ports, in one place, and a harness around the Flask app.

Every port has one in-memory fake here (FAKES maps each port to it; tests/unit/test_fakes.py
checks each fake has every method of its port with a compatible signature):

- FakeStore (MemoryStore) follows the store contract (validity, filters, supersessions,
  assign-once node classes, scope confinement, the scope registry, formation-key records)
  closely enough to drive the HTTP layer and the formation service;
- FakeIdentityStore, FakeVocabularyStore, FakeUsageLedger and FakeOperationStore follow
  their ports, the last two with the domain's own rules (billing.admit, the operation
  transitions);
- FakeCursorStore (CursorStore) keeps the lifecycle walk's cursors in a dict;
- FakeKeyedMemories (KeyedMemoryStore, FakeStore's keyed half) and FakeRecallJudge
  (RecallJudge, a fixed verdict) are in tests/unit/fake_keyed.py;
- RecordingQueue (TaskQueue) keeps the tasks: a test delivers them itself, on its thread;
- the HashingEmbedder (Embedder) and the ScriptedModel (LanguageModel) are the adapters'
  own deterministic, in-process stand-ins; FakeVerifier (IdTokenVerifier) knows one token.

The real adapters are proven by the contract suites, not by these fakes.
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import flask
from pydantic import BaseModel

from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.adapters.models.scripted import ScriptedModel
from jennah.api.app import create_app
from jennah.api.routes import ALL_ROUTES, Route
from jennah.bootstrap import Container, build_tasks
from jennah.domain import billing, retrieval, rules
from jennah.domain.access import ApiKey, Enterprise, Role, RoleBinding, User
from jennah.domain.billing import (
    Admission,
    Consumption,
    EnterpriseBilling,
    Plan,
    UsageDimension,
    UsageRecord,
    check_billing,
)
from jennah.domain.card import CardKey, ClaimFilter
from jennah.domain.claim_state import ClaimState
from jennah.domain.lifecycle import WalkCursor
from jennah.domain.models import (
    HIDDEN_STATUSES,
    BriefVariant,
    ChangeLogEntry,
    CommitPlan,
    CommitResult,
    Direction,
    Evidence,
    ExecutionLogStep,
    FormationKeyRecord,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MetadataFilter,
    ScopeRecord,
    ScopeRef,
    ScoredRecord,
    Status,
    StoredBrief,
)
from jennah.domain.operations import (
    Claim,
    ClaimOutcome,
    FormationOperation,
    OperationError,
    after_cancel,
    after_claim,
    after_finish,
    after_release,
    check_outcome,
    stranded,
)
from jennah.domain.suppression import Suppression
from jennah.domain.vocabulary import Declaration, Vocabulary
from jennah.errors import Aborted, AlreadyExists, JennahError, NotFound, Unauthenticated
from jennah.ports.cursors import CursorStore
from jennah.ports.embedder import Embedder
from jennah.ports.id_token import IdTokenVerifier
from jennah.ports.identity import IdentityStore
from jennah.ports.keyed import KeyedMemoryStore, RecallJudge
from jennah.ports.ledger import (
    USAGE_RETENTION,
    BillingSnapshot,
    RollupStep,
    SpanTotals,
    UsageFilters,
    UsageLedger,
    UsageSpan,
)
from jennah.ports.model import LanguageModel
from jennah.ports.operations import OperationStore
from jennah.ports.store import MemoryStore
from jennah.ports.tasks import FormationTask, TaskQueue
from jennah.ports.vocabulary import VocabularyStore
from jennah.services.access import hash_secret, user_token
from jennah.services.formation import KEY_CLAIMED
from jennah.settings import Settings
from tests.unit.fake_keyed import FakeKeyedMemories, FakeRecallJudge

_WORD = re.compile(r"\w+")

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
    keys: dict[tuple[ScopeRef, str], FormationKeyRecord] = field(default_factory=dict)
    scopes: dict[ScopeRef, ScopeRecord] = field(default_factory=dict)
    evidence: dict[tuple[ScopeRef, str], Evidence] = field(default_factory=dict)  # (scope, id|ref)
    briefs: dict[tuple[ScopeRef, str], StoredBrief] = field(default_factory=dict)
    change_log: dict[tuple[ScopeRef, str], ChangeLogEntry] = field(default_factory=dict)
    suppressions: dict[tuple[ScopeRef, str], Suppression] = field(default_factory=dict)

    def scoped(self) -> list[dict[Any, Any]]:
        """The tables whose keys start with the scope."""
        return [
            self.chunks, self.nodes, self.edges, self.steps, self.keys,
            self.evidence, self.briefs, self.change_log, self.suppressions,
        ]  # fmt: skip


class FakeStore(FakeKeyedMemories):
    """MemoryStore in memory: one lock stands in for the transaction. A plan's
    formation-key record is committed with it (a second commit of the same key loses
    with FORMATION_KEY_CLAIMED) and shows in `snapshot`. Keyed memory: fake_keyed.py."""

    def __init__(self) -> None:
        FakeKeyedMemories.__init__(self)
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
            record = plan.formation_key
            if record is not None and (plan.scope, record.formation_key) in self._tables.keys:
                raise Aborted(
                    f"formationKey {record.formation_key!r} was committed first by another request",
                    reason=KEY_CLAIMED,
                )
            staged = copy.deepcopy(self._tables)
            stamp = self._commit_timestamp()
            if plan.registration is not None and plan.scope not in staged.scopes:
                registered = plan.registration.model_copy(update={"scope": plan.scope})
                registered.created_at = registered.created_at or stamp
                staged.scopes[plan.scope] = registered
            self._write(staged, plan, stamp)
            chunk_closed = self._supersede(staged.chunks, plan.scope, plan.chunk_supersessions)
            edge_closed = self._supersede(staged.edges, plan.scope, plan.edge_supersessions)
            updated = self._update_claims(staged, plan, stamp)
            self._write_claim_rows(staged, plan, stamp)
            self._write_suppressions(staged, plan, stamp)
            if record is not None:
                committed = record.model_copy(update={"committed_at": stamp})
                staged.keys[(plan.scope, record.formation_key)] = committed
            self._tables = staged
            self.plans.append(plan)
        return CommitResult(
            commit_timestamp=stamp,
            chunks_written=len(plan.chunks),
            nodes_written=len(plan.nodes),
            edges_written=len(plan.edges),
            chunk_supersessions=chunk_closed,
            edge_supersessions=edge_closed,
            claims_updated=updated,
        )

    @staticmethod
    def _update_claims(staged: _Tables, plan: CommitPlan, stamp: datetime) -> int:
        for change in plan.claim_updates:
            row = staged.chunks.get((plan.scope, change.memory_id))
            if row is None:
                raise NotFound(
                    f"{change.memory_id} does not exist in this scope",
                    metadata={"id": change.memory_id},
                )
            if row.revision != change.expected_revision:
                raise Aborted(
                    f"{change.memory_id} changed under this writer: revision {row.revision}, "
                    f"expected {change.expected_revision}",
                    reason=rules.REVISION_CHANGED,
                )
            update: dict[str, Any] = {
                k: v
                for k, v in change.model_dump(
                    exclude={"memory_id", "expected_revision", "invalid_at"}
                ).items()
                if v is not None
            }
            if change.invalid_at is not None and row.invalid_at is None:
                update["invalid_at"] = change.invalid_at
            update.update(revision=row.revision + 1, updated_at=stamp)
            staged.chunks[(plan.scope, change.memory_id)] = row.model_copy(update=update)
        return len(plan.claim_updates)

    @staticmethod
    def _write_claim_rows(staged: _Tables, plan: CommitPlan, stamp: datetime) -> None:
        scope = plan.scope
        for line in plan.evidence:
            staged.evidence.setdefault((scope, f"{line.memory_id}|{line.ref}"), line)
        for brief in plan.briefs:
            compiled = brief.model_copy(update={"compiled_at": stamp})
            staged.briefs[(scope, brief.variant.value)] = compiled
        for entry in plan.change_log:
            logged = entry.model_copy(update={"recorded_at": entry.recorded_at or stamp})
            key = f"{logged.recorded_at.isoformat()}|{logged.memory_id}|{logged.change}"
            staged.change_log[(scope, key)] = logged

    @staticmethod
    def _write_suppressions(staged: _Tables, plan: CommitPlan, stamp: datetime) -> None:
        scope = plan.scope
        for suppression_id in plan.suppressions_removed:
            if staged.suppressions.pop((scope, suppression_id), None) is None:
                raise NotFound(
                    f"suppression {suppression_id!r} was not found",
                    metadata={"suppressionId": suppression_id},
                )
        for rule in plan.suppressions:
            if (scope, rule.id) in staged.suppressions:
                raise AlreadyExists(
                    f"suppression {rule.id} exists already",
                    metadata={"suppressionId": rule.id},
                )
            staged.suppressions[(scope, rule.id)] = rule.model_copy(
                deep=True, update={"created_at": rule.created_at or stamp}
            )

    def list_suppressions(
        self, scope: ScopeRef, after: str | None, limit: int
    ) -> list[Suppression]:
        rules_ = sorted(
            (r for (s, _), r in self._tables.suppressions.items() if s == scope),
            key=lambda r: r.id,
        )
        return [r.model_copy(deep=True) for r in rules_ if after is None or r.id > after][:limit]

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
            if old is not None:  # a replace is the next revision; only updates reinforce
                keep = (
                    "created_at", "valid_at", "invalid_at", "superseded_by", "status",
                    "reinforcement_count", "last_reinforced_at",
                )  # fmt: skip
                new = new.model_copy(update={k: getattr(old, k) for k in keep})
                new.revision = old.revision + 1
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
                    update["revision"] = row.revision + 1
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
            for r in self._eligible(scope, filters, as_of)
        ]
        scored.sort(key=lambda s: (-s.score, s.record.id))
        return scored[:top_k]

    def search_words(
        self,
        scope: ScopeRef,
        words: Sequence[str],
        limit: int,
        filters: Sequence[MetadataFilter],
        as_of: datetime,
        *,
        fuzzy: bool = False,
    ) -> list[ScoredRecord]:
        """Whole lowercase words (no stemming); with `fuzzy`, shared letter trigrams of
        the words. The score counts the words (or trigrams) a text holds."""
        terms = {g for w in words for g in retrieval.trigrams(w)} if fuzzy else set(words)
        scored = []
        for r in self._eligible(scope, filters, as_of):
            text = r.text.lower()
            held = terms & (set(retrieval.trigrams(text)) if fuzzy else set(_WORD.findall(text)))
            if held:
                scored.append(ScoredRecord(record=r, score=float(len(held))))
        scored.sort(key=lambda s: (-s.score, s.record.id))
        return scored[:limit]

    def held_words(
        self,
        scope: ScopeRef,
        words: Sequence[str],
        filters: Sequence[MetadataFilter],
        as_of: datetime,
    ) -> set[str]:
        """The words some eligible chunk holds whole (lowercase, no stemming)."""
        eligible = self._eligible(scope, filters, as_of)
        return set(words) & {w for r in eligible for w in _WORD.findall(r.text.lower())}

    def _eligible(
        self, scope: ScopeRef, filters: Sequence[MetadataFilter], as_of: datetime
    ) -> list[MemoryRecord]:
        """The chunks a search may return: valid at `as_of`, shown, filters met."""
        return [
            r
            for r in self._chunks(scope)
            if _valid(r, as_of)
            and r.status not in HIDDEN_STATUSES
            and all(rules.matches_filter(r.metadata, f) for f in filters)
        ]

    def get_chunks(self, scope: ScopeRef, ids: Sequence[str]) -> list[MemoryRecord]:
        return [r for r in self._chunks(scope) if r.id in set(ids)]

    def list_chunks(
        self, scope: ScopeRef, as_of: datetime | None, limit: int, offset: int
    ) -> list[MemoryRecord]:
        rows = [
            r
            for r in self._chunks(scope)
            if as_of is None or (_valid(r, as_of) and r.status not in HIDDEN_STATUSES)
        ]
        return rows[offset : offset + limit]

    def list_claims(
        self,
        scope: ScopeRef,
        statuses: Sequence[Status] | None,
        after: str | None,
        limit: int,
    ) -> list[MemoryRecord]:
        rows = [
            r.model_copy(update={"embedding": None})
            for r in self._chunks(scope)
            if (statuses is None or r.status in statuses) and (after is None or r.id > after)
        ]
        return rows[:limit]

    def list_claims_page(
        self,
        scope: ScopeRef,
        claim_filter: ClaimFilter,
        after: CardKey | None,
        limit: int,
    ) -> list[MemoryRecord]:
        def shown(r: MemoryRecord) -> bool:
            return (
                r.status in claim_filter.statuses
                and claim_filter.type in (None, r.type)
                and claim_filter.sensitivity in (None, r.sensitivity)
                and (claim_filter.applies_to is None or claim_filter.applies_to in r.applies_to)
            )

        def micros(instant: datetime) -> int:
            return (instant - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)

        def newest_first(r: MemoryRecord) -> tuple[int, str]:
            assert r.created_at is not None
            return (-micros(r.created_at), r.id)

        rows = sorted((r for r in self._chunks(scope) if shown(r)), key=newest_first)
        if after is not None:
            rows = [r for r in rows if newest_first(r) > (-micros(after[0]), after[1])]
        return [r.model_copy(update={"embedding": None}) for r in rows[:limit]]

    def list_claim_states(
        self, scope: ScopeRef, statuses: Sequence[Status] | None
    ) -> list[ClaimState]:
        return [
            ClaimState.of(r)
            for r in self._chunks(scope)
            if statuses is None or r.status in statuses
        ]

    def list_evidence(self, scope: ScopeRef, memory_ids: Sequence[str]) -> list[Evidence]:
        wanted = set(memory_ids)
        lines = [e for (s, _), e in self._tables.evidence.items() if s == scope]
        return sorted(
            (e for e in lines if e.memory_id in wanted),
            key=lambda e: (e.memory_id, e.recorded_at, e.ref),
        )

    def get_brief(self, scope: ScopeRef, variant: BriefVariant) -> StoredBrief | None:
        return self._tables.briefs.get((scope, variant.value))

    def list_change_log(self, scope: ScopeRef, limit: int, offset: int = 0) -> list[ChangeLogEntry]:
        lines = [e for (s, _), e in self._tables.change_log.items() if s == scope]
        lines.sort(key=lambda e: (e.memory_id, e.change))
        lines.sort(key=lambda e: e.recorded_at or datetime.min.replace(tzinfo=UTC), reverse=True)
        return lines[offset : offset + limit]

    def set_time_zone(self, scope: ScopeRef, time_zone: str) -> ScopeRecord:
        with self._lock:
            record = self._tables.scopes.get(scope)
            if record is None:
                raise NotFound(f"scope {scope.scope_id} does not exist")
            updated = record.model_copy(update={"time_zone": time_zone})
            self._tables.scopes[scope] = updated
            return updated

    def walk_scopes(self, after: ScopeRef | None, limit: int) -> list[ScopeRecord]:
        def position(ref: ScopeRef) -> tuple[str, str]:
            return (ref.enterprise_id, ref.scope_id)

        ordered = sorted(self._tables.scopes.values(), key=lambda r: position(r.scope))
        return [r for r in ordered if after is None or position(r.scope) > position(after)][:limit]

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

    def find_chunks_by_content(
        self, scope: ScopeRef, content_hashes: Sequence[str], as_of: datetime | None
    ) -> list[MemoryRecord]:
        wanted = set(content_hashes)
        return [
            r
            for r in self._chunks(scope)
            if r.content_hash in wanted and (as_of is None or _valid(r, as_of))
        ]

    def get_formation_key(self, scope: ScopeRef, formation_key: str) -> FormationKeyRecord | None:
        return self._tables.keys.get((scope, formation_key))

    # the scope registry

    def get_scope(self, scope: ScopeRef) -> ScopeRecord | None:
        return self._tables.scopes.get(scope)

    def list_scopes(
        self, enterprise_id: str, after: str | None = None, limit: int | None = None
    ) -> list[ScopeRecord]:
        found = [r for s, r in self._tables.scopes.items() if s.enterprise_id == enterprise_id]
        ordered = sorted(found, key=lambda r: r.scope.scope_id)
        return _page(ordered, lambda r: r.scope.scope_id, after, limit)

    def _register_keyed_scope(self, scope: ScopeRef, registration: ScopeRecord) -> None:
        with self._lock:
            if scope in self._tables.scopes:
                return
            registered = registration.model_copy(update={"scope": scope})
            registered.created_at = registered.created_at or self._commit_timestamp()
            self._tables.scopes[scope] = registered

    def destroy_scope(self, scope: ScopeRef) -> int:
        erased_keyed = self.drop_keyed_scope(scope)
        with self._lock:
            erased = erased_keyed + int(self._tables.scopes.pop(scope, None) is not None)
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
        rows["formation_keys"] = {k: v.model_dump() for k, v in tables.keys.items() if mine(k[0])}
        rows.update(self.keyed_snapshot(mine))
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

    def __init__(self, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.levels: dict[tuple[str, str | None], Declaration] = {}
        self.clock = clock

    def get(self, enterprise_id: str, scope_id: str | None) -> Declaration | None:
        return self.levels.get((enterprise_id, scope_id))

    def put(self, enterprise_id: str, scope_id: str | None, vocabulary: Vocabulary) -> Declaration:
        declaration = Declaration(vocabulary=vocabulary, update_time=self.clock())
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


_COLUMNS = {
    UsageDimension.SCOPE: "spent_in_scope",
    UsageDimension.CALLER: "caller",
    UsageDimension.MODEL: "model",
    UsageDimension.REGION: "region",
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class FakeUsageLedger:
    """UsageLedger in memory: the records, the live reservations, the billing settings and
    the rollup watermark; admission decides with `billing.admit` under one lock. Reports
    read the records (the port promises the same answers with or without aggregates), so
    `fold` only advances the watermark and forgets what is past retention."""

    def __init__(self, default_plan: Plan = Plan.FREE) -> None:
        self.default_plan = billing.check_default_plan(default_plan)
        self.settings: dict[str, EnterpriseBilling] = {}
        self.records: dict[tuple[str, str], UsageRecord] = {}  # (enterprise, formation id)
        self.reservations: dict[tuple[str, str], tuple[datetime, Consumption]] = {}
        self.watermark = _EPOCH
        self._lock = threading.Lock()

    def get_billing(self, enterprise_id: str) -> EnterpriseBilling:
        found = self.settings.get(enterprise_id)
        return found or EnterpriseBilling(enterprise_id=enterprise_id, plan=self.default_plan)

    def put_billing(self, billing: EnterpriseBilling) -> None:
        check_billing(billing)
        self.settings[billing.enterprise_id] = billing.model_copy()

    def set_overage_multiple(self, enterprise_id: str, multiple: float) -> EnterpriseBilling:
        multiple = billing.check_overage_multiple(multiple)
        with self._lock:
            changed = self.get_billing(enterprise_id).model_copy(
                update={"overage_multiple": multiple}
            )
            self.settings[enterprise_id] = changed
        return changed

    def admit(self, enterprise_id: str, formation_id: str, at: datetime) -> Admission:
        with self._lock:
            expired = [k for k, (ends, _) in self.reservations.items() if ends <= at]
            for key in expired:
                del self.reservations[key]
            settings = self.get_billing(enterprise_id)
            period = billing.allowance_period(settings, at)
            used = self._used(enterprise_id, period.start, period.end)
            held = self._in_progress(enterprise_id, at, excluding=formation_id)
            admission = billing.admit(settings, used, held, at)
            ends = at + billing.RESERVATION_LIFETIME
            self.reservations[(enterprise_id, formation_id)] = (ends, admission.reserved)
        return admission

    def settle(self, enterprise_id: str, formation_id: str, record: UsageRecord | None) -> bool:
        with self._lock:
            self.reservations.pop((enterprise_id, formation_id), None)
            if record is None or (record.enterprise_id, record.formation_id) in self.records:
                return False
            recorded_at = max(record.recorded_at, self.watermark)
            self.records[(record.enterprise_id, record.formation_id)] = record.model_copy(
                update={"recorded_at": recorded_at}
            )
            return True

    def recorded(self, enterprise_id: str, formation_ids: Sequence[str]) -> list[UsageRecord]:
        with self._lock:
            wanted = set(formation_ids)
            return [
                record
                for (enterprise, formation_id), record in self.records.items()
                if enterprise == enterprise_id and formation_id in wanted
            ]

    def snapshot(self, enterprise_id: str, at: datetime) -> BillingSnapshot:
        with self._lock:
            settings = self.get_billing(enterprise_id)
            period = billing.allowance_period(settings, at)
            return BillingSnapshot(
                billing=settings,
                period=period,
                used=self._used(enterprise_id, period.start, period.end),
                in_progress=self._in_progress(enterprise_id, at, excluding=None),
            )

    def usage_totals(
        self,
        enterprise_id: str,
        spans: Sequence[UsageSpan],
        group_by: UsageDimension | None,
        filters: UsageFilters,
    ) -> list[SpanTotals]:
        hour = timedelta(hours=1)
        for span in spans:
            if span.hourly and ((span.start - _EPOCH) % hour or (span.end - _EPOCH) % hour):
                raise ValueError(f"an hourly span must start and end on whole hours: {span}")
        totals: dict[tuple[int, str | None], list[int]] = {}
        for record in self._reported(enterprise_id, filters):
            key = None if group_by is None else str(getattr(record, _COLUMNS[group_by]))
            for index, span in enumerate(spans):
                if span.start <= record.recorded_at < span.end:
                    sums = totals.setdefault((index, key), [0, 0, 0, 0])
                    sums[0] += 1
                    sums[1] += record.input_tokens
                    sums[2] += record.output_tokens
                    sums[3] += record.units
        return [
            SpanTotals(span=i, key=k, formations=f, input_tokens=t, output_tokens=o, units=u)
            for (i, k), (f, t, o, u) in totals.items()
        ]

    def fold(self, until: datetime, window: timedelta) -> RollupStep:
        with self._lock:
            start = self.watermark
            if start >= until:
                return RollupStep(watermark=start, rows_folded=0)
            pending = [r.recorded_at for r in self.records.values() if r.recorded_at >= start]
            end = min(until, min(pending) + window) if pending else until
            folded = sum(
                1
                for r in self.records.values()
                if start <= r.recorded_at < end and r.reported_tokens
            )
            if end == until:  # the rollup's last step
                forget = until - USAGE_RETENTION
                for key in [k for k, r in self.records.items() if r.recorded_at < forget]:
                    del self.records[key]
            self.watermark = end
        return RollupStep(watermark=end, rows_folded=folded)

    def _used(self, enterprise_id: str, start: datetime, end: datetime) -> Consumption:
        mine = [
            r
            for (e, _), r in self.records.items()
            if e == enterprise_id and start <= billing.utc_day(r.recorded_at) < end
        ]
        return Consumption(
            formations=len(mine),
            units=sum(r.units for r in mine),
            output_tokens=sum(r.output_tokens for r in mine),
        )

    def _in_progress(self, enterprise_id: str, at: datetime, excluding: str | None) -> Consumption:
        held = [
            reserved
            for (e, f), (ends, reserved) in self.reservations.items()
            if e == enterprise_id and ends > at and f != excluding
        ]
        return Consumption(
            formations=len(held),
            units=sum(r.units for r in held),
            output_tokens=sum(r.output_tokens for r in held),
        )

    def _reported(self, enterprise_id: str, filters: UsageFilters) -> list[UsageRecord]:
        return [
            r
            for (e, _), r in self.records.items()
            if e == enterprise_id
            and r.reported_tokens
            and all(
                filters.value(d) is None or getattr(r, column) == filters.value(d)
                for d, column in _COLUMNS.items()
            )
        ]


class FakeOperationStore:
    """OperationStore in memory: each method applies the port's pure transition to the
    stored operation under one lock, as the adapters do in one transaction."""

    def __init__(self) -> None:
        self.operations: dict[tuple[str, str], FormationOperation] = {}
        self._lock = threading.Lock()

    def create(self, operation: FormationOperation) -> None:
        with self._lock:
            key = (operation.enterprise_id, operation.operation_id)
            if key in self.operations:
                raise AlreadyExists(
                    f"operation {operation.operation_id!r} already exists", field="operationId"
                )
            self.operations[key] = operation.model_copy()

    def get(self, enterprise_id: str, operation_id: str) -> FormationOperation | None:
        return self.operations.get((enterprise_id, operation_id))

    def claim(
        self, enterprise_id: str, operation_id: str, worker: str, now: datetime, lease: timedelta
    ) -> Claim:
        with self._lock:
            claim = after_claim(self.get(enterprise_id, operation_id), worker, now, lease)
            if claim.outcome is not ClaimOutcome.MISSING and claim.operation is not None:
                self.operations[(enterprise_id, operation_id)] = claim.operation
            return claim

    def finish(
        self,
        enterprise_id: str,
        operation_id: str,
        now: datetime,
        *,
        receipt_json: str | None = None,
        error: OperationError | None = None,
    ) -> FormationOperation | None:
        check_outcome(receipt_json, error)
        with self._lock:
            operation = self.get(enterprise_id, operation_id)
            if operation is None:
                return None
            finished = after_finish(operation, now, receipt_json, error)
            self.operations[(enterprise_id, operation_id)] = finished
            return finished

    def release(self, enterprise_id: str, operation_id: str, worker: str, now: datetime) -> None:
        with self._lock:
            operation = self.get(enterprise_id, operation_id)
            if operation is not None:
                released = after_release(operation, worker, now)
                self.operations[(enterprise_id, operation_id)] = released

    def cancel(
        self, enterprise_id: str, operation_id: str, now: datetime
    ) -> FormationOperation | None:
        with self._lock:
            operation = self.get(enterprise_id, operation_id)
            if operation is None:
                return None
            cancelled = after_cancel(operation, now)
            self.operations[(enterprise_id, operation_id)] = cancelled
            return cancelled

    def list_newest(
        self, enterprise_id: str, limit: int, before: tuple[datetime, str] | None = None
    ) -> list[FormationOperation]:
        with self._lock:
            mine = sorted(
                (op for op in self.operations.values() if op.enterprise_id == enterprise_id),
                key=lambda op: (op.create_time, op.operation_id),
                reverse=True,
            )
        if before is not None:
            mine = [op for op in mine if (op.create_time, op.operation_id) < before]
        return mine[:limit]

    def unfinished(self, now: datetime, limit: int = 500) -> list[FormationOperation]:
        with self._lock:
            return [op for op in self.operations.values() if stranded(op, now)][:limit]

    def sweep(self, now: datetime, limit: int = 500) -> int:
        with self._lock:
            expired = [k for k, op in self.operations.items() if op.expire_time <= now][:limit]
            for key in expired:
                del self.operations[key]
            return len(expired)

    def delete_scope(self, enterprise_id: str, scope_id: str) -> int:
        with self._lock:
            doomed = [
                k
                for k, op in self.operations.items()
                if op.enterprise_id == enterprise_id and op.scope_id == scope_id
            ]
            for key in doomed:
                del self.operations[key]
            return len(doomed)


@dataclass
class FakeCursorStore:
    """CursorStore in memory; `puts` counts the writes."""

    def __init__(self) -> None:
        self.saved: dict[str, WalkCursor] = {}
        self.puts = 0

    def get(self, name: str) -> WalkCursor | None:
        return self.saved.get(name)

    def put(self, name: str, cursor: WalkCursor) -> None:
        self.puts += 1
        self.saved[name] = cursor


class RecordingQueue:
    """The TaskQueue port as a list: deliveries happen when a test makes them, on its own
    thread; `failure`, when set, is what enqueue raises."""

    tasks: list[FormationTask] = field(default_factory=list)
    failure: JennahError | None = None

    def enqueue(self, task: FormationTask) -> None:
        if self.failure is not None:
            raise self.failure
        self.tasks.append(task)


class InlineQueue:
    """A TaskQueue that does the form-worker's work at once, on the enqueuing thread: what
    `jnh serve`'s pool does, without the pool. `deliver` answers True when the task is done
    (False: deliver again); after `max_attempts` the task goes to `abandon`."""

    def __init__(
        self,
        deliver: Any = None,
        abandon: Any = None,
        max_attempts: int = 3,
    ) -> None:
        self.deliver = deliver
        self.abandon = abandon
        self.max_attempts = max_attempts
        self.tasks: list[FormationTask] = []

    def enqueue(self, task: FormationTask) -> None:
        self.tasks.append(task)
        if self.deliver is None:
            return
        for _ in range(self.max_attempts):
            if self.deliver(task):
                return
        if self.abandon is not None:
            self.abandon(task)


def form_worker(container: Container) -> InlineQueue:
    """An InlineQueue doing the work of the container's local pool (bootstrap.build_tasks):
    the same handler and abandonment, taken from a pool that never starts a thread."""
    pool = build_tasks(
        container.settings.model_copy(update={"formation_queue": "local"}), container
    )
    return InlineQueue(pool._handler, pool._on_abandon)  # type: ignore[attr-defined]


class FakeVerifier:
    """An IdTokenVerifier that knows one token, "google-id-token", of ana@example.com."""

    def verify(self, token: str) -> str:
        if token != "google-id-token":
            raise Unauthenticated("the ID token is not valid: bad signature")
        return "ana@example.com"


# Each port, and how to make its fake (tests/unit/test_fakes.py checks they match).
FAKES: dict[type[Any], Any] = {
    MemoryStore: FakeStore,
    IdentityStore: FakeIdentityStore,
    VocabularyStore: FakeVocabularyStore,
    UsageLedger: FakeUsageLedger,
    OperationStore: FakeOperationStore,
    TaskQueue: RecordingQueue,
    Embedder: HashingEmbedder,
    LanguageModel: ScriptedModel,
    IdTokenVerifier: FakeVerifier,
    CursorStore: FakeCursorStore,
    KeyedMemoryStore: FakeKeyedMemories,
    RecallJudge: FakeRecallJudge,
}


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
    *,
    usage: UsageLedger | None = None,
    operations: OperationStore | None = None,
    tasks: TaskQueue | None = None,
    model: LanguageModel | None = None,
) -> Container:
    """A container on fakes: FakeStore, FakeIdentityStore (enterprise "local" with the
    root user's credential TOKEN), FakeVocabularyStore, FakeUsageLedger,
    FakeOperationStore, an InlineQueue doing the form-worker's work on the caller's thread
    and the HashingEmbedder; the model is built from the settings (the rules model) unless
    given. Nothing opens a file or starts a thread."""
    if identity is None:
        identity = FakeIdentityStore()
        add_enterprise(identity, ENTERPRISE, ROOT, ROOT_SECRET)
    inline = InlineQueue()
    container = Container(
        Settings(data_dir=tmp_path, store="sqlite", embedder="hashing"),
        store=store or FakeStore(),
        identity=identity,
        vocabularies=vocabularies or FakeVocabularyStore(),
        ledger=usage or FakeUsageLedger(),
        operations=operations or FakeOperationStore(),
        tasks=tasks or inline,
        embedder=HashingEmbedder(),
        model=model,
        verifier=verifier,
        cursors=FakeCursorStore(),
    )
    worker = form_worker(container)
    inline.deliver, inline.abandon = worker.deliver, worker.abandon
    return container


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
