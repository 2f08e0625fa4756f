"""Contract: reading memory (issue 17) on both stores.

The memory card (`list_claims_page`): newest first (created_at descending, then id), paged
by key and stable while claims are written, each filter term, scope isolation. A whole
claim with its lineage both ways (services.read_memory), and excerpts exact to the turn
from a stored execution-log step (services.excerpt).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jennah.adapters.sqlite import schema
from jennah.adapters.sqlite.connection import open_connection
from jennah.adapters.sqlite.store import SqliteStore
from jennah.domain import rules
from jennah.domain.card import ClaimFilter, parse_filter
from jennah.domain.formation import TURN_OFFSETS, Turn, TurnRole, render
from jennah.domain.models import (
    CommitPlan,
    ExecutionLogStep,
    MemoryRecord,
    MemoryType,
    ScopeRecord,
    ScopeRef,
    Sensitivity,
    Status,
)
from jennah.errors import InvalidArgument, NotFound
from jennah.ports.store import MemoryStore
from jennah.services import excerpt, read_memory
from jennah.services.commands import ChunkInput, SupersessionInput
from tests.contract.conftest import EMBEDDER, at, commit_items, new_scope


def claim(scope: ScopeRef, text: str, **fields: Any) -> MemoryRecord:
    return MemoryRecord(
        id=rules.chunk_id(text, None),
        scope=scope,
        text=text,
        content_hash=rules.content_hash(text),
        embedding=EMBEDDER.embed(text),
        **fields,
    )


def write(store: MemoryStore, scope: ScopeRef, *claims: MemoryRecord, **plan: Any) -> None:
    registration = ScopeRecord(scope=scope, kind="agent")
    store.apply(CommitPlan(scope=scope, registration=registration, chunks=list(claims), **plan))


def card_order(store: MemoryStore, scope: ScopeRef, ids: list[str]) -> list[str]:
    """The ids newest first by the stored created_at, then id: the card's order."""
    stored = store.get_chunks(scope, ids)
    return [r.id for r in sorted(stored, key=lambda r: (-_micros(r.created_at), r.id))]


def _micros(instant: datetime | None) -> int:
    assert instant is not None
    return (instant - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def page_ids(
    store: MemoryStore, scope: ScopeRef, flt: ClaimFilter | None = None, limit: int = 100
) -> list[str]:
    return [r.id for r in store.list_claims_page(scope, flt or ClaimFilter(), None, limit)]


def test_the_card_lists_newest_first_then_by_id(store: MemoryStore, scope: ScopeRef) -> None:
    first = claim(scope, "Ana likes tea")
    write(store, scope, first)
    together = [claim(scope, f"claim written together {i}") for i in range(3)]
    write(store, scope, *together)
    last = claim(scope, "Bo likes coffee")
    write(store, scope, last)
    ids = [first.id, *(c.id for c in together), last.id]
    listed = page_ids(store, scope)
    assert listed == card_order(store, scope, ids)
    assert listed[0] == last.id and listed[-1] == first.id
    assert listed[1:4] == sorted(c.id for c in together)
    (row,) = store.list_claims_page(scope, ClaimFilter(), None, 1)
    assert row.embedding is None and row.text == "Bo likes coffee"


def test_pages_continue_after_a_key_and_stay_stable_under_inserts(
    store: MemoryStore, scope: ScopeRef
) -> None:
    for i in range(3):
        write(store, scope, *(claim(scope, f"batch {i} claim {j}") for j in range(2)))
    everything = page_ids(store, scope)
    pages: list[str] = []
    after = None
    while True:
        page = store.list_claims_page(scope, ClaimFilter(), after, 4)
        pages.extend(r.id for r in page)
        if len(page) < 4:
            break
        assert page[-1].created_at is not None
        after = (page[-1].created_at, page[-1].id)
        write(store, scope, claim(scope, f"written while paging after {page[-1].id}"))
    assert pages == everything


def test_each_filter_term_narrows_the_card(store: MemoryStore, scope: ScopeRef) -> None:
    directive = claim(scope, "Ask before posting", type=MemoryType.DIRECTIVE, applies_to=["team"])
    health = claim(scope, "Bo takes insulin", sensitivity=Sensitivity.HEALTH, applies_to=["bo"])
    dormant = claim(scope, "Bo liked judo", status=Status.DORMANT, applies_to=["bo", "judo"])
    retracted = claim(scope, "Bo is shy", status=Status.RETRACTED, applies_to=["bo"])
    for written in (directive, health, dormant, retracted):
        write(store, scope, written)

    def ids(text: str) -> set[str]:
        return set(page_ids(store, scope, parse_filter(text)))

    assert ids("") == {directive.id, health.id, dormant.id}  # retracted: only when asked
    assert ids('status = "retracted"') == {retracted.id}
    assert ids('status = "dormant"') == {dormant.id}
    assert ids('type = "directive"') == {directive.id}
    assert ids('sensitivity = "health"') == {health.id}
    assert ids('appliesTo = "bo"') == {health.id, dormant.id}
    assert ids('appliesTo = "judo"') == {dormant.id}
    assert ids('appliesTo = "bo" AND status = "retracted"') == {retracted.id}
    assert ids('appliesTo = "bo" AND type = "directive"') == set()
    assert ids('appliesTo = "nobody"') == set()


def test_the_card_never_lists_another_scope(store: MemoryStore, scope: ScopeRef) -> None:
    other = new_scope(scope.enterprise_id)
    write(store, scope, claim(scope, "mine"))
    write(store, other, claim(other, "theirs"))
    assert page_ids(store, scope) == [rules.chunk_id("mine", None)]
    assert page_ids(store, new_scope()) == []


def test_a_claim_reads_whole_with_its_lineage_both_ways(
    store: MemoryStore, scope: ScopeRef
) -> None:
    texts = ["Ana lives in Porto", "Ana lives in Lisbon", "Ana lives in Madrid"]
    ids = [rules.chunk_id(text, at(2024 + i)) for i, text in enumerate(texts)]
    commit_items(store, scope, chunks=[ChunkInput(text=texts[0], valid_at=at(2024))])
    for i in (1, 2):
        replacement = ChunkInput(text=texts[i], valid_at=at(2024 + i))
        commit_items(store, scope, supersessions=[
            SupersessionInput(chunk_id=ids[i - 1], replacement_chunk=replacement)])  # fmt: skip
    middle = read_memory.read_claim(store, scope, ids[1])
    assert middle.claim.status is Status.SUPERSEDED
    assert middle.ref == f"memory://{scope.scope_id}/{ids[1]}"
    assert [r.id for r in middle.supersedes] == [ids[0]]
    assert [r.id for r in middle.superseded_by] == [ids[2]]
    assert [r.id for r in read_memory.read_claim(store, scope, ids[2]).supersedes] == [
        ids[1], ids[0],
    ]  # fmt: skip
    assert middle.okf.startswith(f"---\nid: {ids[1]}\n")
    assert middle.okf.endswith("\nAna lives in Lisbon\n")
    with pytest.raises(NotFound, match="memory 'chk_missing' was not found"):
        read_memory.read_claim(store, scope, "chk_missing")


TURNS = [
    Turn(role=TurnRole.USER, content="Check with me before posting — por favor."),
    Turn(role=TurnRole.ASSISTANT, content="Will do.\n\nI'll ask first."),
    Turn(role=TurnRole.TOOL_RESULT, content='{"ok": true}'),
]


def test_an_excerpt_is_exact_to_the_turn(store: MemoryStore, scope: ScopeRef) -> None:
    rendered = render(TURNS, at(2024))
    offsets = ",".join(str(o) for o in rendered.offsets)
    step = ExecutionLogStep(step_id=rendered.step_id, tool_input=rendered.tool_input,
                            metadata={TURN_OFFSETS: offsets})  # fmt: skip
    write(store, scope, steps=[step])
    base = f"conv://{scope.scope_id}/{rendered.step_id}"
    for first in range(3):
        for last in range(first, 3):
            found = excerpt.read_excerpt(store, scope, f"{base}#turn={first}-{last}")
            assert [(t.number, t.role, t.text) for t in found.turns] == [
                (i, TURNS[i].role, TURNS[i].content) for i in range(first, last + 1)
            ]
            assert found.turn_count == 3
    assert len(excerpt.read_excerpt(store, scope, base).turns) == 3
    with pytest.raises(InvalidArgument, match="has 3 turns"):
        excerpt.read_excerpt(store, scope, f"{base}#turn=1-3")
    elsewhere = new_scope(scope.enterprise_id)
    write(store, elsewhere, claim(elsewhere, "x"))
    with pytest.raises(NotFound, match="was not found in scope"):
        excerpt.read_excerpt(store, elsewhere, base.replace(scope.scope_id, elsewhere.scope_id))
    with pytest.raises(NotFound):
        excerpt.read_excerpt(store, elsewhere, base)


def test_a_version_5_sqlite_file_gets_the_card_index(tmp_path: Path, scope: ScopeRef) -> None:
    """SQLite only: a file written before the card existed is upgraded in place."""
    path = tmp_path / "memory.db"
    store = SqliteStore(path)
    write(store, scope, claim(scope, "Ana likes tea"))
    store.close()
    conn = open_connection(path)
    conn.execute("DROP INDEX memory_records_by_created_at")
    conn.execute("PRAGMA user_version = 5")
    conn.close()
    store = SqliteStore(path)
    assert page_ids(store, scope) == [rules.chunk_id("Ana likes tea", None)]
    store.close()
    conn = open_connection(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION == 8
    indexes = {row[1] for row in conn.execute("PRAGMA index_list(memory_records)")}
    assert "memory_records_by_created_at" in indexes
    plan = conn.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM memory_records WHERE enterprise_id = ? AND "
        "scope_id = ? ORDER BY created_at DESC, id LIMIT 20",
        ("e", "s"),
    ).fetchall()
    steps = " ".join(str(row[-1]) for row in plan)
    assert "memory_records_by_created_at" in steps and "TEMP B-TREE" not in steps
    conn.close()


def test_the_card_by_node_pages_newest_first_and_stays_in_its_scope(
    store: MemoryStore, scope: ScopeRef
) -> None:
    """appliesTo pages keep the card's order and paging (SQLite reads them through its
    node index) and never reach another scope's claims of the same node."""
    about_bo = [claim(scope, f"Bo fact {i}", applies_to=["bo", f"n{i}"]) for i in range(7)]
    for written in about_bo:
        write(store, scope, written)
    write(store, scope, claim(scope, "Ana fact", applies_to=["ana"]))
    other = new_scope(scope.enterprise_id)
    write(store, other, claim(other, "Bo fact elsewhere", applies_to=["bo"]))
    by_bo = parse_filter('appliesTo = "bo"')
    paged: list[str] = []
    after = None
    while page := store.list_claims_page(scope, by_bo, after, 3):
        paged.extend(r.id for r in page)
        assert page[-1].created_at is not None
        after = (page[-1].created_at, page[-1].id)
    assert paged == card_order(store, scope, [c.id for c in about_bo])
    assert page_ids(store, other, by_bo) == [rules.chunk_id("Bo fact elsewhere", None)]


def test_the_sqlite_node_index_follows_every_write(tmp_path: Path, scope: ScopeRef) -> None:
    """SQLite only: `claim_applies_to` is built for a version-6 file and follows a claim
    rewritten with other nodes and a destroyed scope."""
    path = tmp_path / "memory.db"
    store = SqliteStore(path)
    first = claim(scope, "Ana likes tea", applies_to=["ana", "tea"])
    write(store, scope, first)
    store.close()
    conn = open_connection(path)  # back to version 6: no node index
    conn.execute("DROP TABLE claim_applies_to")
    conn.execute("PRAGMA user_version = 6")
    conn.close()

    store = SqliteStore(path)
    assert page_ids(store, scope, parse_filter('appliesTo = "tea"')) == [first.id]
    write(store, scope, first.model_copy(update={"applies_to": ["ana", "coffee"]}))
    assert page_ids(store, scope, parse_filter('appliesTo = "tea"')) == []
    assert page_ids(store, scope, parse_filter('appliesTo = "coffee"')) == [first.id]
    store.destroy_scope(scope)
    store.close()
    conn = open_connection(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION == 8
    assert conn.execute("SELECT count(*) FROM claim_applies_to").fetchone()[0] == 0
    conn.close()
