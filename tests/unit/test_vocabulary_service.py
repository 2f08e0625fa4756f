"""The vocabulary service: declare, read and remove at two levels, who may, and what
formation resolves. Runs the real Access over the embedded stores (one SQLite file)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from jennah.domain.access import Caller, Role, RoleBinding, User
from jennah.domain.models import CommitPlan, ScopeRecord, ScopeRef
from jennah.domain.vocabulary import EntityClass, RelationType, Signature, Vocabulary
from jennah.errors import InvalidArgument, JennahError, NotFound, PermissionDenied
from jennah.services import vocabulary as service
from jennah.services.access import Access, create_enterprise
from jennah.services.vocabulary import VocabularyView
from tests.unit.fakes import FakeIdentityStore, FakeStore, FakeVocabularyStore

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
ENTERPRISE = "acme"
ROOT = Caller(enterprise_id=ENTERPRISE, principal="user:root")

PERSON = EntityClass(name="Person", description="an individual human being")
ORGANIZATION = EntityClass(name="Organization", description="a company")
WORKS_AT = RelationType(
    name="WORKS_AT",
    signatures=(Signature(source_class="Person", target_class="Organization"),),
)
DEFAULT = Vocabulary(entity_classes=(PERSON, ORGANIZATION), relation_types=(WORKS_AT,))
SUPPORT = Vocabulary(entity_classes=(EntityClass(name="Ticket", description="a case"),))
EMPTY = Vocabulary()


@dataclass
class World:
    access: Access
    identity: FakeIdentityStore
    store: FakeStore
    vocabularies: FakeVocabularyStore

    def caller(self, principal: str, role: Role, **selectors: list[str]) -> Caller:
        """A caller of ENTERPRISE bound to `role` with the given reach."""
        if principal.startswith("user:"):
            self.identity.put_user(User(enterprise_id=ENTERPRISE, principal=principal))
        self.identity.put_binding(
            RoleBinding(enterprise_id=ENTERPRISE, principal=principal, role=role, **selectors)
        )
        return Caller(enterprise_id=ENTERPRISE, principal=principal)

    def register(self, scope_id: str, kind: str) -> None:
        ref = ScopeRef(enterprise_id=ENTERPRISE, scope_id=scope_id)
        self.store.apply(CommitPlan(scope=ref, registration=ScopeRecord(scope=ref, kind=kind)))

    def declare(self, caller: Caller, scope_id: str | None, v: Vocabulary | None) -> VocabularyView:
        return service.declare(caller, self.access, self.vocabularies, scope_id, v)

    def get(self, caller: Caller, scope_id: str | None) -> VocabularyView:
        return service.get(caller, self.access, self.vocabularies, scope_id)

    def remove(self, caller: Caller, scope_id: str | None) -> None:
        service.remove(caller, self.access, self.vocabularies, scope_id)

    def stored(self, scope_id: str | None) -> Vocabulary | None:
        declaration = self.vocabularies.get(ENTERPRISE, scope_id)
        return None if declaration is None else declaration.vocabulary


@pytest.fixture
def world() -> Iterator[World]:
    identity, store = FakeIdentityStore(), FakeStore()
    vocabularies = FakeVocabularyStore(clock=lambda: NOW)
    create_enterprise(identity, ENTERPRISE, ROOT.principal, NOW)
    yield World(Access(identity, store, lambda: NOW), identity, store, vocabularies)


def failure(call: object, *args: object) -> JennahError:
    assert callable(call)
    with pytest.raises(JennahError) as caught:
        call(*args)
    return caught.value


def names(vocabulary: Vocabulary | None) -> list[str] | None:
    return None if vocabulary is None else [c.name for c in vocabulary.entity_classes]


# -- the enterprise level ----------------------------------------------------------------


def test_declaring_the_enterprise_default_and_reading_it_back(world: World) -> None:
    view = world.declare(ROOT, None, DEFAULT)
    assert view.declaration is not None
    assert (view.declaration.vocabulary, view.declaration.update_time) == (DEFAULT, NOW)
    assert view.resolved == DEFAULT
    assert world.get(ROOT, None) == view


def test_an_enterprise_without_a_declaration_reads_as_absent(world: World) -> None:
    assert world.get(ROOT, None) == VocabularyView(None, None)
    assert world.get(ROOT, "bot.support") == VocabularyView(None, None)


def test_an_empty_enterprise_declaration_turns_classification_off_everywhere(
    world: World,
) -> None:
    view = world.declare(ROOT, None, EMPTY)
    assert view.declaration is not None and view.declaration.vocabulary == EMPTY
    assert view.resolved is None
    assert world.get(ROOT, "bot.support") == VocabularyView(None, None)


# -- the three states of a scope ---------------------------------------------------------


def test_a_scope_without_a_declaration_inherits_the_enterprise_default(world: World) -> None:
    world.declare(ROOT, None, DEFAULT)
    assert world.get(ROOT, "bot.support") == VocabularyView(None, DEFAULT)


def test_a_scope_declaration_replaces_the_default_outright(world: World) -> None:
    world.declare(ROOT, None, DEFAULT)
    only_person = Vocabulary(entity_classes=(PERSON,))
    view = world.declare(ROOT, "bot.support", only_person)
    assert view.declaration is not None and view.declaration.vocabulary == only_person
    assert names(view.resolved) == ["Person"]  # Organization is not merged back in
    assert world.get(ROOT, "bot.support") == view
    assert world.get(ROOT, "bot.other").resolved == DEFAULT


def test_an_empty_scope_declaration_has_a_declaration_and_no_resolved(world: World) -> None:
    world.declare(ROOT, None, DEFAULT)
    view = world.declare(ROOT, "bot.support", EMPTY)
    assert view.declaration is not None and view.declaration.vocabulary == EMPTY
    assert view.resolved is None
    assert world.get(ROOT, "bot.support") == view


def test_removing_a_scope_declaration_restores_inheritance(world: World) -> None:
    world.declare(ROOT, None, DEFAULT)
    world.declare(ROOT, "bot.support", EMPTY)
    world.remove(ROOT, "bot.support")
    assert world.get(ROOT, "bot.support") == VocabularyView(None, DEFAULT)
    assert world.stored(None) == DEFAULT


def test_removing_the_enterprise_default_leaves_scope_declarations(world: World) -> None:
    world.declare(ROOT, None, DEFAULT)
    world.declare(ROOT, "bot.support", SUPPORT)
    world.remove(ROOT, None)
    assert world.get(ROOT, None) == VocabularyView(None, None)
    assert world.get(ROOT, "bot.support").resolved == SUPPORT
    assert world.get(ROOT, "bot.other") == VocabularyView(None, None)


@pytest.mark.parametrize(
    ("scope_id", "message"),
    [
        (None, "no vocabulary is declared at the enterprise level"),
        ("bot.support", "no vocabulary is declared at scope 'bot.support'"),
    ],
)
def test_removing_what_is_not_declared_is_not_found_naming_the_level(
    world: World, scope_id: str | None, message: str
) -> None:
    world.declare(ROOT, "bot.other" if scope_id is None else None, DEFAULT)
    error = failure(world.remove, ROOT, scope_id)
    assert isinstance(error, NotFound)
    assert error.message == message


# -- declaring always carries a vocabulary, and is all or nothing ---------------------------


@pytest.mark.parametrize("scope_id", [None, "bot.support"])
def test_a_declaration_without_a_vocabulary_is_refused_and_changes_nothing(
    world: World, scope_id: str | None
) -> None:
    world.declare(ROOT, scope_id, DEFAULT)
    error = failure(world.declare, ROOT, scope_id, None)
    assert isinstance(error, InvalidArgument)
    assert error.metadata["field"] == "vocabulary"
    assert "vocabulary is required" in error.message and "use DELETE" in error.message
    assert world.stored(scope_id) == DEFAULT


@pytest.mark.parametrize("scope_id", [None, "bot.support"])
def test_a_rejected_declaration_leaves_the_previous_one_intact(
    world: World, scope_id: str | None
) -> None:
    before = world.declare(ROOT, scope_id, DEFAULT)
    too_many = Vocabulary(entity_classes=tuple(EntityClass(name=f"C{i}") for i in range(33)))
    bad_signature = Vocabulary(
        entity_classes=(PERSON,),
        relation_types=(
            RelationType(
                name="WORKS_AT",
                signatures=(Signature(source_class="Person", target_class="Company"),),
            ),
        ),
    )
    for rejected in (too_many, bad_signature):
        assert isinstance(failure(world.declare, ROOT, scope_id, rejected), InvalidArgument)
        assert world.get(ROOT, scope_id).declaration == before.declaration


def test_a_declaration_is_stored_with_descriptions_flattened(world: World) -> None:
    vocabulary = Vocabulary(entity_classes=(EntityClass(name="Person", description="a\r\nhuman"),))
    view = world.declare(ROOT, None, vocabulary)
    assert view.resolved is not None and view.resolved.entity_classes[0].description == "a human"
    assert world.stored(None) == view.resolved


# -- who may -----------------------------------------------------------------------------


@pytest.mark.parametrize("scope_id", [None, "bot.support"])
def test_an_api_key_can_never_declare_or_remove(world: World, scope_id: str | None) -> None:
    everywhere = {"agent_selectors": ["*"], "subject_selectors": ["*"]}
    key = world.caller("api_key:k1", Role.ADMINISTRATOR, **everywhere)
    world.declare(ROOT, scope_id, DEFAULT)
    for call, args in ((world.declare, (key, scope_id, SUPPORT)), (world.remove, (key, scope_id))):
        error = failure(call, *args)
        assert isinstance(error, PermissionDenied)
        assert error.reason == "MANAGEMENT_PERMISSION_WITH_API_KEY"
    assert world.stored(scope_id) == DEFAULT


@pytest.mark.parametrize("scope_id", [None, "bot.support"])
def test_an_api_key_with_read_may_read(world: World, scope_id: str | None) -> None:
    key = world.caller("api_key:k2", Role.MEMBER, subject_selectors=["bot.*"])
    world.declare(ROOT, None, DEFAULT)
    assert world.get(key, scope_id).resolved == DEFAULT


@pytest.mark.parametrize("scope_id", [None, "bot.support"])
def test_declaring_and_removing_need_manage(world: World, scope_id: str | None) -> None:
    member = world.caller("user:ana", Role.MEMBER, subject_selectors=["*"])
    world.declare(ROOT, scope_id, DEFAULT)
    for call, args in (
        (world.declare, (member, scope_id, SUPPORT)),
        (world.remove, (member, scope_id)),
    ):
        error = failure(call, *args)
        assert isinstance(error, PermissionDenied)
        assert error.reason == "PERMISSION_MISSING"
        assert error.metadata["permission"] == "agent.vocabulary:manage"
    assert world.get(member, scope_id).declaration is not None  # reading needs only read


def test_reading_needs_read(world: World) -> None:
    nobody = Caller(enterprise_id=ENTERPRISE, principal="user:nobody")  # no binding at all
    error = failure(world.get, nobody, None)
    assert isinstance(error, PermissionDenied)
    assert error.metadata["permission"] == "agent.vocabulary:read"


def test_the_enterprise_level_needs_no_reach(world: World) -> None:
    admin = world.caller("user:admin", Role.ADMINISTRATOR)  # no selectors at all
    view = world.declare(admin, None, DEFAULT)
    assert world.get(admin, None) == view
    world.remove(admin, None)
    assert world.stored(None) is None


@pytest.mark.parametrize("registered", [True, False])
def test_without_reach_a_scope_is_answered_as_though_it_did_not_exist(
    world: World, registered: bool
) -> None:
    if registered:
        world.register("crm", "agent")
        world.declare(ROOT, "crm", SUPPORT)
    reach = {"agent_selectors": ["bot.*"], "subject_selectors": ["user.*"]}
    admin = world.caller("user:admin", Role.ADMINISTRATOR, **reach)
    for call, args in (
        (world.declare, (admin, "crm", DEFAULT)),
        (world.get, (admin, "crm")),
        (world.remove, (admin, "crm")),
    ):
        error = failure(call, *args)
        assert isinstance(error, NotFound)
        assert error.message == "scope 'crm' was not found"
    assert world.stored("crm") == (SUPPORT if registered else None)


def test_reach_is_checked_before_the_permission(world: World) -> None:
    key = world.caller("api_key:k3", Role.ADMINISTRATOR, agent_selectors=["bot.*"])
    world.register("crm", "agent")
    assert isinstance(failure(world.declare, key, "crm", DEFAULT), NotFound)
    world.register("bot.a", "agent")
    assert isinstance(failure(world.declare, key, "bot.a", DEFAULT), PermissionDenied)


def test_reach_is_in_the_namespace_the_scope_kind_selects(world: World) -> None:
    world.register("bot.agent", "agent")
    world.register("bot.subject", "subject")
    agents_only = world.caller("user:a", Role.ADMINISTRATOR, agent_selectors=["bot.*"])
    subjects_only = world.caller("user:s", Role.ADMINISTRATOR, subject_selectors=["bot.*"])
    world.declare(agents_only, "bot.agent", DEFAULT)
    world.declare(subjects_only, "bot.subject", SUPPORT)
    assert isinstance(failure(world.declare, agents_only, "bot.subject", EMPTY), NotFound)
    assert isinstance(failure(world.get, subjects_only, "bot.agent"), NotFound)
    assert (world.stored("bot.agent"), world.stored("bot.subject")) == (DEFAULT, SUPPORT)


def test_reach_does_not_substitute_for_the_permission(world: World) -> None:
    world.register("bot.a", "agent")
    member = world.caller("user:m", Role.MEMBER, agent_selectors=["*"])
    assert isinstance(failure(world.declare, member, "bot.a", DEFAULT), PermissionDenied)


def test_an_invalid_scope_id_is_refused(world: World) -> None:
    error = failure(world.declare, ROOT, "not a scope", DEFAULT)
    assert isinstance(error, InvalidArgument)
    assert error.metadata["field"] == "scopeId"


def test_a_scope_not_written_yet_may_be_declared_without_registering_it(world: World) -> None:
    world.declare(ROOT, None, DEFAULT)
    assert world.get(ROOT, "bot.new") == VocabularyView(None, DEFAULT)
    world.declare(ROOT, "bot.new", SUPPORT)
    assert world.get(ROOT, "bot.new").resolved == SUPPORT
    assert world.store.get_scope(ScopeRef(enterprise_id=ENTERPRISE, scope_id="bot.new")) is None
    world.remove(ROOT, "bot.new")
    assert world.stored("bot.new") is None


def test_enterprises_never_see_each_other(world: World) -> None:
    create_enterprise(world.identity, "globex", "user:groot", NOW)
    other = Caller(enterprise_id="globex", principal="user:groot")
    world.declare(ROOT, None, DEFAULT)
    world.declare(ROOT, "bot.support", SUPPORT)
    assert world.get(other, None) == VocabularyView(None, None)
    assert world.get(other, "bot.support") == VocabularyView(None, None)
    assert isinstance(failure(world.remove, other, "bot.support"), NotFound)
    world.declare(other, None, EMPTY)
    assert world.stored(None) == DEFAULT


# -- it gates nothing, and formation resolves when it starts ---------------------------------


def test_declaring_and_removing_change_no_memory(world: World) -> None:
    world.register("bot.support", "agent")
    scopes = world.store.list_scopes(ENTERPRISE)
    world.declare(ROOT, None, DEFAULT)
    world.declare(ROOT, "bot.support", EMPTY)
    world.remove(ROOT, "bot.support")
    world.remove(ROOT, None)
    assert world.store.list_scopes(ENTERPRISE) == scopes


def test_formation_resolves_through_the_same_table(world: World) -> None:
    scope = ScopeRef(enterprise_id=ENTERPRISE, scope_id="bot.support")
    assert service.resolve_for_formation(world.vocabularies, scope) is None
    world.declare(ROOT, None, DEFAULT)
    assert service.resolve_for_formation(world.vocabularies, scope) == DEFAULT
    world.declare(ROOT, "bot.support", SUPPORT)
    assert service.resolve_for_formation(world.vocabularies, scope) == SUPPORT
    world.declare(ROOT, "bot.support", EMPTY)
    assert service.resolve_for_formation(world.vocabularies, scope) is None
    world.remove(ROOT, "bot.support")
    assert service.resolve_for_formation(world.vocabularies, scope) == DEFAULT


def test_a_formation_keeps_the_vocabulary_it_started_with(world: World) -> None:
    scope = ScopeRef(enterprise_id=ENTERPRISE, scope_id="bot.support")
    world.declare(ROOT, None, DEFAULT)
    started_with = service.resolve_for_formation(world.vocabularies, scope)
    world.declare(ROOT, None, SUPPORT)  # a declaration arriving mid-formation
    assert started_with == DEFAULT  # a value, not a live view
    assert service.resolve_for_formation(world.vocabularies, scope) == SUPPORT  # the next one
