"""The vocabulary store contract: every test here runs against BOTH vocabulary stores.

`vocabularies` is parametrized over the embedded SQLite store (in the memory
store's file) and Firestore (on the local emulator, marked `firestore`). Each
test uses fresh, unique enterprise ids, so tests need no reset and may share
one emulator.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from jennah.domain.vocabulary import (
    MAX_DESCRIPTION_LENGTH,
    MAX_ENTITY_CLASSES,
    MAX_NAME_LENGTH,
    MAX_RELATION_TYPES,
    MAX_SIGNATURES,
    Declaration,
    EntityClass,
    RelationType,
    Signature,
    Vocabulary,
    validated,
)
from jennah.ports.vocabulary import VocabularyStore

PERSON = EntityClass(name="Person", description="an individual human being, including colleagues")
ORGANIZATION = EntityClass(name="Organization", description="a company, employer, school or agency")
WORKS_AT = RelationType(
    name="WORKS_AT",
    description="employment of a person by an organization",
    signatures=(Signature(source_class="Person", target_class="Organization"),),
)
CLASSES = Vocabulary(entity_classes=(PERSON, ORGANIZATION), relation_types=(WORKS_AT,))
EMPTY = Vocabulary()
RELATIONS_ONLY = Vocabulary(relation_types=(RelationType(name="KNOWS", description="met"),))
TICKETS = Vocabulary(entity_classes=(EntityClass(name="Ticket", description="a support case"),))
# Names of any script (letters, with their marks, and digits) declared as the spec allows.
ANY_SCRIPT = validated(
    Vocabulary(
        entity_classes=(EntityClass(name="人物", description="個人"), EntityClass(name="कर्मचारी")),
        relation_types=(
            RelationType(
                name="勤務先",
                signatures=(Signature(source_class="人物", target_class="कर्मचारी"),),
            ),
        ),
    )
)


def _sqlite_vocabularies(tmp_path: Path) -> Iterator[VocabularyStore]:
    from jennah.adapters.sqlite.vocabulary import SqliteVocabularyStore

    store = SqliteVocabularyStore(tmp_path / "memory.db")
    yield store
    store.close()


def _firestore_vocabularies() -> Iterator[VocabularyStore]:
    from jennah.adapters.firestore.vocabulary import FirestoreVocabularyStore
    from tests.support.firestore_emulator import firestore_test_client

    yield FirestoreVocabularyStore(firestore_test_client())


@pytest.fixture(params=["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def vocabularies(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VocabularyStore]:
    if request.param == "sqlite":
        yield from _sqlite_vocabularies(tmp_path)
    else:
        yield from _firestore_vocabularies()


@pytest.fixture
def enterprise() -> str:
    return f"ent-{uuid.uuid4().hex}"


def vocabulary_of(declaration: Declaration | None) -> Vocabulary | None:
    return None if declaration is None else declaration.vocabulary


def largest() -> Vocabulary:
    """A declaration at every bound at once."""
    names = [f"{i:02d}".ljust(MAX_NAME_LENGTH, "c") for i in range(MAX_ENTITY_CLASSES)]
    description = "é—描 述" * (MAX_DESCRIPTION_LENGTH // 5)  # non-ASCII, at the bound
    signatures = tuple(
        Signature(source_class=names[i], target_class=names[-1 - i]) for i in range(MAX_SIGNATURES)
    )
    vocabulary = Vocabulary(
        entity_classes=tuple(EntityClass(name=n, description=description) for n in names),
        relation_types=tuple(
            RelationType(
                name=f"{i:02d}".ljust(MAX_NAME_LENGTH, "r"),
                description=description,
                signatures=signatures,
            )
            for i in range(MAX_RELATION_TYPES)
        ),
    )
    return validated(vocabulary)


# -- the three states ----------------------------------------------------------------


def test_both_levels_start_absent(vocabularies: VocabularyStore, enterprise: str) -> None:
    assert vocabularies.get(enterprise, None) is None
    assert vocabularies.get(enterprise, "bot.support") is None


@pytest.mark.parametrize("scope_id", [None, "bot.support"])
@pytest.mark.parametrize("vocabulary", [CLASSES, EMPTY, RELATIONS_ONLY, ANY_SCRIPT])
def test_a_declaration_round_trips_in_each_state(
    vocabularies: VocabularyStore, enterprise: str, scope_id: str | None, vocabulary: Vocabulary
) -> None:
    before = datetime.now(UTC)
    written = vocabularies.put(enterprise, scope_id, vocabulary)
    assert written.vocabulary == vocabulary
    assert written.update_time.tzinfo is not None
    assert abs((written.update_time - before).total_seconds()) < 60
    assert vocabularies.get(enterprise, scope_id) == written


def test_an_empty_declaration_is_present_not_absent(
    vocabularies: VocabularyStore, enterprise: str
) -> None:
    vocabularies.put(enterprise, "bot.quiet", EMPTY)
    declaration = vocabularies.get(enterprise, "bot.quiet")
    assert declaration is not None and declaration.vocabulary == EMPTY
    assert vocabularies.get(enterprise, "bot.other") is None


def test_a_declaration_at_every_bound_round_trips(
    vocabularies: VocabularyStore, enterprise: str
) -> None:
    vocabulary = largest()
    assert len(vocabulary.entity_classes[0].description) == MAX_DESCRIPTION_LENGTH
    vocabularies.put(enterprise, None, vocabulary)
    assert vocabulary_of(vocabularies.get(enterprise, None)) == vocabulary


# -- replace, never merge ------------------------------------------------------------


@pytest.mark.parametrize("scope_id", [None, "bot.support"])
def test_put_replaces_the_whole_declaration(
    vocabularies: VocabularyStore, enterprise: str, scope_id: str | None
) -> None:
    first = vocabularies.put(enterprise, scope_id, CLASSES)
    vocabularies.put(enterprise, scope_id, TICKETS)
    assert vocabulary_of(vocabularies.get(enterprise, scope_id)) == TICKETS  # no Person left
    vocabularies.put(enterprise, scope_id, EMPTY)
    assert vocabulary_of(vocabularies.get(enterprise, scope_id)) == EMPTY
    last = vocabularies.put(enterprise, scope_id, CLASSES)
    assert vocabularies.get(enterprise, scope_id) == last
    assert last.update_time >= first.update_time


# -- delete ----------------------------------------------------------------------------


@pytest.mark.parametrize("scope_id", [None, "bot.support"])
@pytest.mark.parametrize("vocabulary", [CLASSES, EMPTY])
def test_delete_restores_absence(
    vocabularies: VocabularyStore, enterprise: str, scope_id: str | None, vocabulary: Vocabulary
) -> None:
    vocabularies.put(enterprise, scope_id, vocabulary)
    assert vocabularies.delete(enterprise, scope_id) is True
    assert vocabularies.get(enterprise, scope_id) is None
    assert vocabularies.delete(enterprise, scope_id) is False


def test_deleting_what_was_never_declared_is_false(
    vocabularies: VocabularyStore, enterprise: str
) -> None:
    assert vocabularies.delete(enterprise, None) is False
    assert vocabularies.delete(enterprise, "bot.support") is False


def test_a_level_can_be_declared_again_after_a_delete(
    vocabularies: VocabularyStore, enterprise: str
) -> None:
    vocabularies.put(enterprise, "bot.support", CLASSES)
    vocabularies.delete(enterprise, "bot.support")
    vocabularies.put(enterprise, "bot.support", TICKETS)
    assert vocabulary_of(vocabularies.get(enterprise, "bot.support")) == TICKETS


# -- levels and tenants are independent ---------------------------------------------------


def test_the_enterprise_and_scope_levels_are_independent(
    vocabularies: VocabularyStore, enterprise: str
) -> None:
    vocabularies.put(enterprise, None, CLASSES)
    assert vocabularies.get(enterprise, "bot.support") is None
    vocabularies.put(enterprise, "bot.support", TICKETS)
    assert vocabulary_of(vocabularies.get(enterprise, None)) == CLASSES
    vocabularies.delete(enterprise, None)
    assert vocabulary_of(vocabularies.get(enterprise, "bot.support")) == TICKETS
    vocabularies.put(enterprise, None, EMPTY)
    vocabularies.delete(enterprise, "bot.support")
    assert vocabulary_of(vocabularies.get(enterprise, None)) == EMPTY


@pytest.mark.parametrize("scope_id", ["enterprise", "vocabulary", "_", "user:ana@x", "a.b-c_d"])
def test_no_scope_id_addresses_the_enterprise_level(
    vocabularies: VocabularyStore, enterprise: str, scope_id: str
) -> None:
    vocabularies.put(enterprise, scope_id, TICKETS)
    assert vocabularies.get(enterprise, None) is None
    vocabularies.put(enterprise, None, CLASSES)
    assert vocabulary_of(vocabularies.get(enterprise, scope_id)) == TICKETS
    assert vocabularies.delete(enterprise, scope_id) is True
    assert vocabulary_of(vocabularies.get(enterprise, None)) == CLASSES


def test_scopes_are_independent(vocabularies: VocabularyStore, enterprise: str) -> None:
    vocabularies.put(enterprise, "bot.a", CLASSES)
    vocabularies.put(enterprise, "bot.b", TICKETS)
    vocabularies.put(enterprise, "bot.a", EMPTY)
    assert vocabulary_of(vocabularies.get(enterprise, "bot.b")) == TICKETS
    vocabularies.delete(enterprise, "bot.b")
    assert vocabulary_of(vocabularies.get(enterprise, "bot.a")) == EMPTY


def test_enterprises_are_isolated(vocabularies: VocabularyStore, enterprise: str) -> None:
    other = f"ent-{uuid.uuid4().hex}"
    vocabularies.put(enterprise, None, CLASSES)
    vocabularies.put(enterprise, "bot.support", TICKETS)
    assert vocabularies.get(other, None) is None
    assert vocabularies.get(other, "bot.support") is None
    assert vocabularies.delete(other, None) is False
    assert vocabularies.delete(other, "bot.support") is False
    vocabularies.delete_scope(other, "bot.support")
    vocabularies.put(other, "bot.support", EMPTY)
    assert vocabulary_of(vocabularies.get(enterprise, None)) == CLASSES
    assert vocabulary_of(vocabularies.get(enterprise, "bot.support")) == TICKETS


# -- scope destruction -------------------------------------------------------------------


def test_delete_scope_erases_only_that_scope(
    vocabularies: VocabularyStore, enterprise: str
) -> None:
    vocabularies.put(enterprise, None, CLASSES)
    vocabularies.put(enterprise, "bot.a", TICKETS)
    vocabularies.put(enterprise, "bot.ab", EMPTY)
    vocabularies.put(enterprise, "bot", RELATIONS_ONLY)
    vocabularies.delete_scope(enterprise, "bot.a")
    assert vocabularies.get(enterprise, "bot.a") is None
    assert vocabulary_of(vocabularies.get(enterprise, None)) == CLASSES
    assert vocabulary_of(vocabularies.get(enterprise, "bot.ab")) == EMPTY
    assert vocabulary_of(vocabularies.get(enterprise, "bot")) == RELATIONS_ONLY


def test_delete_scope_is_idempotent(vocabularies: VocabularyStore, enterprise: str) -> None:
    vocabularies.delete_scope(enterprise, "never.declared")
    vocabularies.put(enterprise, "bot.a", EMPTY)
    vocabularies.delete_scope(enterprise, "bot.a")
    vocabularies.delete_scope(enterprise, "bot.a")
    assert vocabularies.get(enterprise, "bot.a") is None


def test_a_destroyed_scope_declared_again_starts_fresh(
    vocabularies: VocabularyStore, enterprise: str
) -> None:
    vocabularies.put(enterprise, "bot.a", CLASSES)
    vocabularies.delete_scope(enterprise, "bot.a")
    vocabularies.put(enterprise, "bot.a", TICKETS)
    assert vocabulary_of(vocabularies.get(enterprise, "bot.a")) == TICKETS


def test_destroying_a_scope_erases_its_declaration_in_this_store(
    vocabularies: VocabularyStore, enterprise: str, tmp_path: Path
) -> None:
    """`admin.destroy_scope` erases the scope's memory and its scope-level vocabulary,
    and nothing of another scope or of the enterprise level."""
    from jennah.adapters.sqlite.store import SqliteStore
    from jennah.domain.access import ScopeKind
    from jennah.domain.models import CommitPlan, ScopeRecord, ScopeRef
    from jennah.services.access import OpenedScope
    from jennah.services.admin import destroy_scope

    memory = SqliteStore(tmp_path / "destroy.db")
    doomed = ScopeRef(enterprise_id=enterprise, scope_id="bot.a")
    memory.apply(CommitPlan(scope=doomed, registration=ScopeRecord(scope=doomed, kind="agent")))
    vocabularies.put(enterprise, None, CLASSES)
    vocabularies.put(enterprise, "bot.a", TICKETS)
    vocabularies.put(enterprise, "bot.b", EMPTY)
    try:
        destroy_scope(memory, vocabularies, OpenedScope(doomed, ScopeKind.AGENT, None))
        assert memory.get_scope(doomed) is None
    finally:
        memory.close()
    assert vocabularies.get(enterprise, "bot.a") is None
    assert vocabulary_of(vocabularies.get(enterprise, "bot.b")) == EMPTY
    assert vocabulary_of(vocabularies.get(enterprise, None)) == CLASSES
