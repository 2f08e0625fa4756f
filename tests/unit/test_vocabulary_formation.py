"""A declared vocabulary steers formation: resolved when the formation starts, handed
to the extraction prompt as data (`to_data`), and used by the offline rules model."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.adapters.models.rules import RulesModel
from jennah.domain.formation import Turn, TurnRole
from jennah.domain.models import Direction, ScopeRecord, ScopeRef
from jennah.domain.vocabulary import (
    EntityClass,
    RelationType,
    Signature,
    Vocabulary,
    to_data,
    validated,
)
from jennah.services.formation import FormationCommand
from jennah.services.formation.candidates import node_id
from jennah.services.vocabulary import resolve_for_formation
from tests.support.formation import form
from tests.unit.fakes import FakeStore, FakeVocabularyStore

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
SCOPE = ScopeRef(enterprise_id="acme", scope_id="bot.support")
DEFAULT = Vocabulary(
    entity_classes=(
        EntityClass(name="Person", description="an individual human being"),
        EntityClass(name="Organization", description="a company, employer,\nschool or agency"),
    ),
    relation_types=(
        RelationType(
            name="WORKS_AT",
            description="employment of a person by an organization",
            signatures=(Signature(source_class="Person", target_class="Organization"),),
        ),
    ),
)


@pytest.fixture
def stores() -> Iterator[tuple[FakeStore, FakeVocabularyStore]]:
    yield FakeStore(), FakeVocabularyStore()


def formed_classes(store: FakeStore, vocabulary: Vocabulary | None) -> dict[str, str | None]:
    """Form one conversation with the rules model; the class of each entity it wrote."""
    command = FormationCommand(
        scope=SCOPE,
        registration=ScopeRecord(scope=SCOPE, kind="agent"),
        turns=[Turn(role=TurnRole.USER, content="I work at Alphaus.")],
        vocabulary=None if vocabulary is None else to_data(vocabulary),
    )
    form(command, store, HashingEmbedder(), RulesModel(), lambda: NOW)
    nodes = store.get_nodes(SCOPE, [node_id("the user"), node_id("Alphaus")])
    return {node.label: node.node_type for node in nodes}


def test_a_formation_under_a_declared_vocabulary_classifies_entities(
    stores: tuple[FakeStore, FakeVocabularyStore],
) -> None:
    store, vocabularies = stores
    vocabularies.put(SCOPE.enterprise_id, None, validated(DEFAULT))
    resolved = resolve_for_formation(vocabularies, SCOPE)
    assert formed_classes(store, resolved) == {"the user": "Person", "Alphaus": "Organization"}
    (edge,) = store.edges_touching(SCOPE, [node_id("the user")], [], Direction.OUTBOUND, None)
    assert edge.relation == "WORKS_AT"


def test_a_scope_declaring_an_empty_vocabulary_classifies_nothing(
    stores: tuple[FakeStore, FakeVocabularyStore],
) -> None:
    store, vocabularies = stores
    vocabularies.put(SCOPE.enterprise_id, None, validated(DEFAULT))
    vocabularies.put(SCOPE.enterprise_id, SCOPE.scope_id, Vocabulary())
    resolved = resolve_for_formation(vocabularies, SCOPE)
    assert resolved is None
    assert formed_classes(store, resolved) == {"the user": None, "Alphaus": None}
