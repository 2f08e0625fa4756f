"""Contract: the store methods formation reads through (content-hash lookup, formation keys)."""

from __future__ import annotations

from jennah.domain import rules
from jennah.domain.models import CommitPlan, FormationKeyRecord, ScopeRef
from jennah.ports.store import MemoryStore
from jennah.services.commands import ChunkInput, SupersessionInput
from tests.contract.conftest import at, chunk_id, commit_items, new_scope


def test_find_chunks_by_content_matches_identical_wording_only(
    store: MemoryStore, scope: ScopeRef
) -> None:
    commit_items(
        store,
        scope,
        chunks=[
            ChunkInput(text="Ana lives in Lisbon"),
            ChunkInput(text="Ana lives in Lisbon", valid_at=at(2020)),
            ChunkInput(text="ana lives in lisbon"),
            ChunkInput(text="Ana likes tea"),
        ],
    )
    found = store.find_chunks_by_content(
        scope, [rules.content_hash("Ana lives in Lisbon"), rules.content_hash("nothing")], None
    )
    assert [r.id for r in found] == sorted(
        [chunk_id("Ana lives in Lisbon"), chunk_id("Ana lives in Lisbon", at(2020))]
    )
    assert store.find_chunks_by_content(scope, [], None) == []


def test_find_chunks_by_content_as_of_keeps_valid_rows(store: MemoryStore, scope: ScopeRef) -> None:
    commit_items(store, scope, chunks=[ChunkInput(text="Ana lives in Lisbon", valid_at=at(2020))])
    commit_items(
        store,
        scope,
        supersessions=[
            SupersessionInput(
                chunk_id=chunk_id("Ana lives in Lisbon", at(2020)),
                replacement_chunk=ChunkInput(text="Ana lives in Porto", valid_at=at(2024)),
            )
        ],
    )
    lisbon = [rules.content_hash("Ana lives in Lisbon")]
    assert [r.id for r in store.find_chunks_by_content(scope, lisbon, at(2022))] == [
        chunk_id("Ana lives in Lisbon", at(2020))
    ]
    assert store.find_chunks_by_content(scope, lisbon, at(2025)) == []
    assert store.find_chunks_by_content(scope, lisbon, at(2019)) == []


def test_find_chunks_by_content_stays_in_its_scope(store: MemoryStore, scope: ScopeRef) -> None:
    other = new_scope(scope.enterprise_id)
    commit_items(store, other, chunks=[ChunkInput(text="Ana lives in Lisbon")])
    assert (
        store.find_chunks_by_content(scope, [rules.content_hash("Ana lives in Lisbon")], None) == []
    )


def test_formation_key_round_trips_with_its_commit_timestamp(
    store: MemoryStore, scope: ScopeRef
) -> None:
    record = FormationKeyRecord(
        formation_key="conversation-8817-turn-42", fingerprint="fp", receipt_json='{"a": 1}'
    )
    result = store.apply(CommitPlan(scope=scope, formation_key=record))
    stored = store.get_formation_key(scope, "conversation-8817-turn-42")
    assert stored == record.model_copy(update={"committed_at": result.commit_timestamp})
    assert store.get_formation_key(scope, "another-key") is None
    assert store.get_formation_key(new_scope(scope.enterprise_id), record.formation_key) is None
