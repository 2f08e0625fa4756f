"""What only the Spanner adapter can get wrong: bound parameters, commit
timestamps, per-call time bounds, error mapping, interleaved evidence. The
behaviour both stores share is in tests/contract."""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from google.api_core import exceptions as google_errors
from google.cloud.spanner_v1 import KeySet, param_types

from jennah import errors
from jennah.adapters.spanner.store import SpannerStore
from jennah.domain import rules
from jennah.domain.models import (
    CommitPlan,
    Direction,
    Evidence,
    FilterOperator,
    FormationKeyRecord,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MetadataFilter,
    ScopeRef,
)
from jennah.ports.store import MemoryStore
from tests.support.spanner_emulator import spanner_test_database

pytestmark = pytest.mark.spanner

NOW = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture
def database() -> Any:
    return spanner_test_database()


@pytest.fixture
def store(database: Any) -> SpannerStore:
    return SpannerStore(database)


@pytest.fixture
def scope() -> ScopeRef:
    return ScopeRef(enterprise_id="ent-spanner", scope_id=f"scope-{uuid.uuid4().hex}")


def _unit(i: int) -> list[float]:
    values = [math.sin(i + 1 + j) for j in range(384)]
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def _chunk(scope: ScopeRef, text: str, metadata: dict[str, str] | None = None) -> MemoryRecord:
    return MemoryRecord(
        id=rules.chunk_id(text, None),
        scope=scope,
        content_hash=rules.content_hash(text),
        text=text,
        metadata=metadata or {},
        embedding=_unit(len(text)),
    )


def test_spanner_store_satisfies_the_port(store: SpannerStore) -> None:
    port: MemoryStore = store
    assert port is store


def test_metadata_filter_keys_and_values_are_bound_not_spliced(
    store: SpannerStore, scope: ScopeRef
) -> None:
    dotted = _chunk(scope, "dotted", {"a.b": "x", "c-d": 'it\'s "quoted"'})
    plain = _chunk(scope, "plain", {"a": "x"})
    store.apply(CommitPlan(scope=scope, chunks=[dotted, plain]))

    def texts(*filters: MetadataFilter) -> set[str]:
        hits = store.search_chunks(scope, _unit(1), 10, list(filters), NOW)
        return {hit.record.text for hit in hits}

    assert texts(MetadataFilter(key="a.b", values=["x"])) == {"dotted"}
    assert texts(MetadataFilter(key="a", values=["x"])) == {"plain"}  # not the path $.a.b
    assert texts(MetadataFilter(key="c-d", values=['it\'s "quoted"'])) == {"dotted"}
    hostile = "x']) OR TRUE OR ('"
    assert texts(MetadataFilter(key=hostile, values=["x"])) == set()
    assert texts(MetadataFilter(key="a", values=[hostile])) == set()
    not_hostile = MetadataFilter(key=hostile, operator=FilterOperator.NOT_EQUALS, values=["x"])
    assert texts(not_hostile) == {"dotted", "plain"}


def test_commit_timestamp_is_created_at_and_a_rewrite_keeps_it(
    store: SpannerStore, scope: ScopeRef
) -> None:
    chunk = _chunk(scope, "kept")
    node = GraphNode(node_id="n1", label="first")
    first = store.apply(CommitPlan(scope=scope, chunks=[chunk], nodes=[node]))
    second = store.apply(
        CommitPlan(
            scope=scope,
            chunks=[chunk.model_copy(update={"summary": "again"})],
            nodes=[node.model_copy(update={"label": "second"})],
        )
    )
    assert second.commit_timestamp > first.commit_timestamp
    assert first.commit_timestamp.tzinfo is UTC
    (record,) = store.get_chunks(scope, [chunk.id])
    assert (record.created_at, record.updated_at) == (
        first.commit_timestamp,
        second.commit_timestamp,
    )
    assert record.summary == "again"
    (stored,) = store.get_nodes(scope, ["n1"])
    assert (stored.created_at, stored.updated_at) == (
        first.commit_timestamp,
        second.commit_timestamp,
    )
    assert type(record.created_at) is datetime  # not the client's DatetimeWithNanoseconds


def test_an_empty_plan_commits(store: SpannerStore, scope: ScopeRef) -> None:
    result = store.apply(CommitPlan(scope=scope))
    assert result.commit_timestamp.tzinfo is UTC
    assert result.chunks_written == 0


def test_a_claimed_formation_key_aborts_the_whole_commit(
    store: SpannerStore, scope: ScopeRef
) -> None:
    key = FormationKeyRecord(formation_key="conv-1", fingerprint="f", receipt_json="{}")
    store.apply(CommitPlan(scope=scope, chunks=[_chunk(scope, "first")], formation_key=key))
    late = _chunk(scope, "second")
    with pytest.raises(errors.Aborted) as raised:
        store.apply(CommitPlan(scope=scope, chunks=[late], formation_key=key))
    assert raised.value.reason == "FORMATION_KEY_CLAIMED"
    assert store.get_chunks(scope, [late.id]) == []


def test_evidence_is_written_with_its_memory_and_erased_with_it(
    store: SpannerStore, database: Any, scope: ScopeRef
) -> None:
    chunk = _chunk(scope, "with evidence")
    line = Evidence(memory_id=chunk.id, ref="step-1#0", quote="with", recorded_at=NOW)
    store.apply(CommitPlan(scope=scope, chunks=[chunk], evidence=[line]))
    key = [scope.enterprise_id, scope.scope_id, chunk.id]
    assert _count_evidence(database, scope) == 1
    with database.batch() as batch:
        batch.delete("memory_records", KeySet(keys=[key]))  # type: ignore[no-untyped-call]
    assert _count_evidence(database, scope) == 0


def _count_evidence(database: Any, scope: ScopeRef) -> int:
    with database.snapshot() as snapshot:
        rows = list(
            snapshot.execute_sql(
                "SELECT COUNT(*) FROM evidence WHERE enterprise_id = @e AND scope_id = @s",
                params={"e": scope.enterprise_id, "s": scope.scope_id},
                param_types={"e": param_types.STRING, "s": param_types.STRING},
                timeout=30,
            )
        )
    return int(rows[0][0])


def test_evidence_for_a_missing_memory_fails_the_commit(
    store: SpannerStore, scope: ScopeRef
) -> None:
    line = Evidence(memory_id="chk_missing", ref="r", quote="q", recorded_at=NOW)
    node = GraphNode(node_id="lonely")
    with pytest.raises(errors.NotFound):
        store.apply(CommitPlan(scope=scope, nodes=[node], evidence=[line]))
    assert store.get_nodes(scope, ["lonely"]) == []


# Per-call time bounds


class Recorder:
    """Wraps a Database and records the time bound of every Spanner call the store makes."""

    def __init__(self, database: Any, fail_with: Exception | None = None) -> None:
        self._database = database
        self.fail_with = fail_with
        self.calls: list[tuple[str, Any]] = []

    @contextmanager
    def snapshot(self, **kwargs: Any) -> Iterator[Any]:
        with self._database.snapshot(**kwargs) as snapshot:
            yield _RecordingReader(snapshot, self)

    def run_in_transaction(self, fn: Callable[[Any], Any], **kwargs: Any) -> Any:
        self.calls.append(("run_in_transaction", kwargs.get("timeout_secs")))
        return self._database.run_in_transaction(
            lambda txn: fn(_RecordingReader(txn, self)), **kwargs
        )


class _RecordingReader:
    def __init__(self, inner: Any, recorder: Recorder) -> None:
        self._inner = inner
        self._recorder = recorder

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name not in ("read", "execute_sql"):
            return attribute

        def recorded(*args: Any, **kwargs: Any) -> Any:
            self._recorder.calls.append((name, kwargs.get("timeout")))
            if self._recorder.fail_with is not None:
                raise self._recorder.fail_with
            return attribute(*args, **kwargs)

        return recorded


def _every_method(store: SpannerStore, scope: ScopeRef) -> None:
    chunk = _chunk(scope, "bounded")
    store.apply(
        CommitPlan(
            scope=scope,
            chunks=[chunk],
            nodes=[GraphNode(node_id="a"), GraphNode(node_id="b")],
            edges=[
                GraphEdge(
                    edge_id=rules.edge_id("a", "r", "b", None), source="a", relation="r", target="b"
                )
            ],
        )
    )
    store.search_chunks(scope, _unit(1), 3, [MetadataFilter(key="k", values=["v"])], NOW)
    store.get_chunks(scope, [chunk.id])
    store.list_chunks(scope, NOW, 10, 0)
    store.find_nodes(scope, [MetadataFilter(key="NodeType", values=["t"])], 10)
    store.get_nodes(scope, ["a"])
    store.edges_touching(scope, ["a"], ["r"], Direction.ANY, NOW)
    store.get_edges(scope, ["e"])
    store.get_step(scope, "s")


def test_every_call_and_the_transaction_carry_the_time_bound(
    database: Any, scope: ScopeRef
) -> None:
    recorder = Recorder(database)
    _every_method(SpannerStore(recorder, timeout_seconds=7.5), scope)
    names = {name for name, _ in recorder.calls}
    assert names == {"run_in_transaction", "read", "execute_sql"}
    assert len(recorder.calls) >= 12
    assert all(timeout == 7.5 for _, timeout in recorder.calls), recorder.calls


@pytest.mark.parametrize(
    ("spanner_error", "ours"),
    [
        (google_errors.DeadlineExceeded, errors.DeadlineExceeded),
        (google_errors.ServiceUnavailable, errors.Unavailable),
        (google_errors.InvalidArgument, errors.InvalidArgument),
        (google_errors.InternalServerError, errors.Internal),
    ],
)
def test_spanner_errors_become_jennah_errors_of_the_same_status(
    database: Any, scope: ScopeRef, spanner_error: Any, ours: type[errors.JennahError]
) -> None:
    failing = Recorder(database, fail_with=spanner_error("injected"))
    store = SpannerStore(failing, timeout_seconds=2)
    with pytest.raises(ours):
        store.list_chunks(scope, None, 10, 0)
    with pytest.raises(ours):
        store.get_nodes(scope, ["a"])
    with pytest.raises(ours):
        store.apply(CommitPlan(scope=scope, nodes=[GraphNode(node_id="a")]))
