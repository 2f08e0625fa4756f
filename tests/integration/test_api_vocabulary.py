"""PUT, GET and DELETE /v1/memory/vocabulary on the wire: the three states, the two
levels, absent versus empty, strict parsing, bounds errors naming the field, who may
declare; and what a declared vocabulary does to memory:form and to destroying a scope.

The wire tests run on the fakes; formation and scope destruction on the real SQLite
stores (the vocabulary store on the memory store's file, as `jnh serve` wires it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jennah.adapters.models.rules import RulesModel
from jennah.adapters.models.scripted import ScriptedModel
from jennah.adapters.sqlite.vocabulary import SqliteVocabularyStore
from jennah.domain.vocabulary import MAX_ENTITY_CLASSES, Vocabulary
from jennah.ports.model import ModelResult
from jennah.ports.prompts import read_data
from tests.integration.test_api_form import sqlite_api
from tests.unit.fakes import ENTERPRISE, Api

V = "/v1/memory/vocabulary"
PERSON = {"name": "Person", "description": "an individual human being, including colleagues"}
ORGANIZATION = {"name": "Organization", "description": "a company, employer, school or agency"}
WORKS_AT = {
    "name": "WORKS_AT",
    "description": "employment of a person by an organization",
    "signatures": [{"sourceClass": "Person", "targetClass": "Organization"}],
}
DEFAULT = {"entityClasses": [PERSON, ORGANIZATION], "relationTypes": [WORKS_AT]}
SUPPORT = {"entityClasses": [{"name": "Ticket", "description": "a support case"}]}
EMPTY_DECLARATION = {"entityClasses": [], "relationTypes": []}


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return Api.create(tmp_path)


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.get_data(as_text=True)
    body: dict[str, Any] = response.get_json()
    return body


def error(response: Any, code: int) -> dict[str, Any]:
    assert response.status_code == code, response.get_data(as_text=True)
    found: dict[str, Any] = response.get_json()["error"]
    return found


def violation(err: dict[str, Any]) -> str:
    """The field of the error's google.rpc.BadRequest field violation."""
    (bad_request,) = [d for d in err["details"] if d["@type"].endswith("BadRequest")]
    field: str = bad_request["fieldViolations"][0]["field"]
    return field


def declaration_of(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer's declaration without its updateTime (which must be there)."""
    declaration = dict(answer["declaration"])
    assert declaration.pop("updateTime").endswith("Z")
    return declaration


def scope(scope_id: str) -> dict[str, str]:
    return {"scopeId": scope_id}


# the three states on the wire


def test_nothing_declared_answers_neither_declaration_nor_resolved(api: Api) -> None:
    assert ok(api.get(V)) == {}
    assert ok(api.get(V, **scope("bot.support"))) == {}


def test_declaring_at_the_enterprise_level_answers_the_declaration_and_what_resolves(
    api: Api,
) -> None:
    declared = ok(api.put(V, {"vocabulary": DEFAULT}))
    assert declaration_of(declared) == DEFAULT
    assert declared["resolved"] == DEFAULT
    read = ok(api.get(V))
    assert read == declared


def test_a_scope_that_inherits_has_no_declaration_and_a_populated_resolved(api: Api) -> None:
    ok(api.put(V, {"vocabulary": DEFAULT}))
    assert ok(api.get(V, **scope("bot.support"))) == {"resolved": DEFAULT}


def test_a_scope_declaration_replaces_the_enterprise_default_outright(api: Api) -> None:
    ok(api.put(V, {"vocabulary": DEFAULT}))
    declared = ok(api.put(V, {"scopeId": "bot.support", "vocabulary": SUPPORT}))
    expected = SUPPORT | {"relationTypes": []}
    assert declaration_of(declared) == expected and declared["resolved"] == expected
    assert ok(api.get(V, **scope("bot.support")))["resolved"] == expected  # not merged
    assert ok(api.get(V))["resolved"] == DEFAULT


def test_an_empty_declaration_has_a_declaration_with_no_classes_and_no_resolved(
    api: Api,
) -> None:
    ok(api.put(V, {"vocabulary": DEFAULT}))
    declared = ok(api.put(V, {"scopeId": "bot.support", "vocabulary": {}}))
    assert declaration_of(declared) == EMPTY_DECLARATION
    assert "resolved" not in declared
    assert ok(api.get(V, **scope("bot.support"))) == declared


def test_removing_restores_inheritance_and_answers_empty(api: Api) -> None:
    ok(api.put(V, {"vocabulary": DEFAULT}))
    ok(api.put(V, {"scopeId": "bot.support", "vocabulary": {}}))
    assert ok(api.delete(V, **scope("bot.support"))) == {}
    assert ok(api.get(V, **scope("bot.support"))) == {"resolved": DEFAULT}
    assert ok(api.delete(V)) == {}
    assert ok(api.get(V)) == {}


def test_removing_what_is_not_declared_is_not_found_naming_the_level(api: Api) -> None:
    at_scope = error(api.delete(V, **scope("bot.support")), 404)
    assert at_scope["message"] == "no vocabulary is declared at scope 'bot.support'"
    at_enterprise = error(api.delete(V), 404)
    assert at_enterprise["message"] == "no vocabulary is declared at the enterprise level"


def test_descriptions_are_flattened_and_may_be_absent(api: Api) -> None:
    vocabulary = {"entityClasses": [{"name": "Person", "description": "a human\n  being\r\n"},
                                    {"name": "Place"}]}  # fmt: skip
    declared = ok(api.put(V, {"vocabulary": vocabulary}))
    assert declared["resolved"]["entityClasses"] == [
        {"name": "Person", "description": "a human being"},
        {"name": "Place", "description": ""},
    ]


# the level: scopeId in the PUT body, never in its query


def test_a_scope_id_query_parameter_on_put_is_ignored(api: Api) -> None:
    ok(api.put(V, {"vocabulary": SUPPORT}, scopeId="bot.support"))
    assert declaration_of(ok(api.get(V)))["entityClasses"] == SUPPORT["entityClasses"]
    assert "declaration" not in ok(api.get(V, **scope("bot.support")))  # it inherits
    assert api.vocabularies.get(ENTERPRISE, "bot.support") is None


def test_put_takes_the_scope_from_its_body(api: Api) -> None:
    ok(api.put(V, {"scopeId": "bot.support", "vocabulary": SUPPORT}))
    assert ok(api.get(V)) == {}
    assert api.vocabularies.get(ENTERPRISE, "bot.support") is not None


@pytest.mark.parametrize("scope_id", ["", "a b", "x/y"])
def test_a_malformed_scope_id_is_refused_naming_it(api: Api, scope_id: str) -> None:
    for response in (
        api.put(V, {"scopeId": scope_id, "vocabulary": {}}),
        api.get(V, scopeId=scope_id),
        api.delete(V, scopeId=scope_id),
    ):
        assert violation(error(response, 400)) == "scopeId"
    assert api.vocabularies.levels == {}


# absent is not empty


@pytest.mark.parametrize("body", [{}, {"scopeId": "bot.support"}, {"vocabulary": None}])
def test_a_put_without_vocabulary_is_refused_and_changes_nothing(
    api: Api, body: dict[str, Any]
) -> None:
    ok(api.put(V, {"vocabulary": DEFAULT}))
    ok(api.put(V, {"scopeId": "bot.support", "vocabulary": SUPPORT}))
    before = dict(api.vocabularies.levels)
    err = error(api.put(V, body), 400)
    assert err["status"] == "INVALID_ARGUMENT" and violation(err) == "vocabulary"
    assert "use DELETE" in err["message"]
    assert api.vocabularies.levels == before


def test_an_empty_object_is_a_present_empty_declaration(api: Api) -> None:
    declared = ok(api.put(V, {"vocabulary": {}}))
    assert declaration_of(declared) == EMPTY_DECLARATION
    stored = api.vocabularies.get(ENTERPRISE, None)
    assert stored is not None and stored.vocabulary == Vocabulary()


# strict parsing


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"vocabulary": {}, "scope": "bot.a"}, "scope"),
        ({"vocabulary": {"classes": []}}, "vocabulary.classes"),
        ({"vocabulary": {"entityClasses": [{"name": "P", "colour": "red"}]}},
         "vocabulary.entityClasses[0].colour"),
        ({"vocabulary": {"relationTypes": [{"name": "R", "signatures": [
            {"sourceClass": "A", "targetClass": "B", "weight": 1}]}]}},
         "vocabulary.relationTypes[0].signatures[0].weight"),
    ],
)  # fmt: skip
def test_unknown_fields_are_refused_naming_the_field(
    api: Api, body: dict[str, Any], field: str
) -> None:
    err = error(api.put(V, body), 400)
    assert err["details"][0]["reason"] == "UNKNOWN_FIELD" and violation(err) == field
    assert api.vocabularies.levels == {}


def test_unknown_query_parameters_are_refused(api: Api) -> None:
    assert violation(error(api.get(V, scope="bot.a"), 400)) == "scope"
    assert violation(error(api.delete(V, level="x"), 400)) == "level"


def test_a_class_without_a_name_is_refused_naming_it(api: Api) -> None:
    err = error(api.put(V, {"vocabulary": {"entityClasses": [{"description": "x"}]}}), 400)
    assert violation(err) == "vocabulary.entityClasses[0].name"


# bounds, from the service, as 400s naming the offending item


def _classes(count: int) -> list[dict[str, str]]:
    return [{"name": f"C{i}"} for i in range(count)]


BOUNDS = [
    ({"entityClasses": _classes(MAX_ENTITY_CLASSES + 1)}, "vocabulary.entityClasses"),
    ({"relationTypes": [{"name": f"R{i}"} for i in range(33)]}, "vocabulary.relationTypes"),
    ({"entityClasses": [{"name": "Per son"}]}, "vocabulary.entityClasses[0].name"),
    ({"entityClasses": [{"name": "P" * 65}]}, "vocabulary.entityClasses[0].name"),
    ({"entityClasses": [{"name": "P", "description": "d" * 201}]},
     "vocabulary.entityClasses[0].description"),
    ({"entityClasses": [{"name": "P"}, {"name": "P"}]}, "vocabulary.entityClasses[1].name"),
    ({"relationTypes": [{"name": "R"}, {"name": "R"}]}, "vocabulary.relationTypes[1].name"),
    ({"entityClasses": [{"name": "A"}], "relationTypes": [{"name": "R", "signatures": [
        {"sourceClass": "A", "targetClass": "B"}]}]},
     "vocabulary.relationTypes[0].signatures[0].targetClass"),
    ({"entityClasses": [{"name": "A"}], "relationTypes": [{"name": "R", "signatures": [
        {"sourceClass": "A", "targetClass": "A"}] * 7}]},
     "vocabulary.relationTypes[0].signatures"),
]  # fmt: skip


@pytest.mark.parametrize(("vocabulary", "field"), BOUNDS)
def test_a_declaration_out_of_bounds_is_refused_and_leaves_the_previous_one(
    api: Api, vocabulary: dict[str, Any], field: str
) -> None:
    previous = ok(api.put(V, {"scopeId": "bot.a", "vocabulary": DEFAULT}))
    err = error(api.put(V, {"scopeId": "bot.a", "vocabulary": vocabulary}), 400)
    assert err["status"] == "INVALID_ARGUMENT"
    assert violation(err) == field and field in err["message"]
    assert ok(api.get(V, **scope("bot.a"))) == previous


# who may declare, read and remove


def member(api: Api, principal: str, role: str = "member", **selectors: list[str]) -> str:
    token: str = ok(api.post("/v1/users", {"principal": principal}))["token"]
    ok(api.post("/v1/roleBindings:grant", {"principal": principal, "role": role, **selectors}))
    return token


def key(api: Api, role: str, **selectors: list[str]) -> str:
    created = ok(api.post("/v1/apiKeys", {"role": role, **selectors}))
    token: str = created["keyString"]
    return token


def test_an_api_key_cannot_declare_or_remove_at_either_level_even_bound_to_root(
    api: Api,
) -> None:
    root_key = key(api, "root")
    ok(api.put(V, {"scopeId": "bot.a", "vocabulary": DEFAULT}))
    for response in (
        api.put(V, {"vocabulary": DEFAULT}, token=root_key),
        api.put(V, {"scopeId": "bot.a", "vocabulary": {}}, token=root_key),
        api.delete(V, token=root_key),
        api.delete(V, token=root_key, **scope("bot.a")),
    ):
        err = error(response, 403)
        assert err["details"][0]["reason"] == "MANAGEMENT_PERMISSION_WITH_API_KEY"
    assert ok(api.get(V, token=root_key, **scope("bot.a")))["resolved"] == DEFAULT


def test_a_key_holding_read_may_read_both_levels(api: Api) -> None:
    reader = key(api, "member", agentSelectors=["bot.*"])
    ok(api.post("/v1/agents/bot.a/memory:commit", {"chunks": [{"text": "x"}]}))
    ok(api.put(V, {"vocabulary": DEFAULT}))
    assert ok(api.get(V, token=reader))["resolved"] == DEFAULT
    assert ok(api.get(V, token=reader, **scope("bot.a")))["resolved"] == DEFAULT
    # a scope not written yet is a subject scope, which agent selectors do not reach
    error(api.get(V, token=reader, **scope("bot.new")), 404)


def test_a_member_reads_but_may_not_declare(api: Api) -> None:
    token = member(api, "user:ana", agentSelectors=["bot.*"])
    ok(api.post("/v1/agents/bot.a/memory:commit", {"chunks": [{"text": "x"}]}))
    assert ok(api.get(V, token=token)) == {}
    err = error(api.put(V, {"vocabulary": DEFAULT}, token=token), 403)
    assert err["details"][0]["metadata"]["permission"] == "agent.vocabulary:manage"
    error(api.put(V, {"scopeId": "bot.a", "vocabulary": {}}, token=token), 403)
    assert api.vocabularies.levels == {}


def test_naming_a_scope_needs_reach_and_without_it_the_scope_is_missing(api: Api) -> None:
    admin = member(api, "user:ops", "administrator", agentSelectors=["bot.*"])
    ok(api.post("/v1/scopes/team.x/memory:commit", {"chunks": [{"text": "x"}]}))
    ok(api.post("/v1/agents/bot.a/memory:commit", {"chunks": [{"text": "x"}]}))
    ok(api.put(V, {"scopeId": "team.x", "vocabulary": SUPPORT}))
    ok(api.put(V, {"vocabulary": DEFAULT}, token=admin))  # the enterprise level: no reach
    ok(api.put(V, {"scopeId": "bot.a", "vocabulary": SUPPORT}, token=admin))
    missing = error(api.get(V, token=admin, **scope("ghost")), 404)
    for response in (
        api.put(V, {"scopeId": "team.x", "vocabulary": {}}, token=admin),
        api.get(V, token=admin, **scope("team.x")),
        api.delete(V, token=admin, **scope("team.x")),
    ):
        assert error(response, 404) == missing | {"message": "scope 'team.x' was not found"}
    assert (
        declaration_of(ok(api.get(V, **scope("team.x"))))["entityClasses"]
        == (SUPPORT["entityClasses"])
    )


def test_reach_is_checked_in_the_namespace_the_scope_kind_selects(api: Api) -> None:
    ok(api.post("/v1/agents/bot.a/memory:commit", {"chunks": [{"text": "x"}]}))
    ok(api.post("/v1/scopes/user.ana/memory:commit", {"chunks": [{"text": "x"}]}))
    subjects_only = member(api, "user:ops", "administrator", subjectSelectors=["*"])
    ok(api.put(V, {"scopeId": "user.ana", "vocabulary": SUPPORT}, token=subjects_only))
    error(api.put(V, {"scopeId": "bot.a", "vocabulary": SUPPORT}, token=subjects_only), 404)


# formation uses the vocabulary resolved when it starts

FORM = "/v1/agents/support-bot/memory:form"
QUERY = "/v1/agents/support-bot/memory:query"
ALPHAUS = {"turns": [{"role": "TURN_ROLE_USER", "content": "I live in Lisbon and I work at "
                                                           "Alphaus."}]}  # fmt: skip


def graph(api: Api) -> tuple[dict[str, str | None], list[tuple[str, str, str]]]:
    """Each node's class by label, and the edges (source, relation, target)."""
    answer = ok(api.get("/v1/agents/support-bot/memory:inspect", graph="true"))
    classes = {n["label"]: n.get("nodeType") for n in answer["nodes"]}
    edges = [(e["source"], e["relation"], e["target"]) for e in answer["edges"]]
    return classes, edges


def of_class(api: Api, node_type: str) -> list[str]:
    start = {"filters": [{"key": "NodeType", "value": node_type}]}
    answer = ok(api.post(QUERY, {"graph": {"start": start}}))
    return sorted(n["label"] for n in answer["graph"]["nodes"])


@pytest.fixture
def sqlite(tmp_path: Path) -> Iterator[Api]:
    with sqlite_api(tmp_path) as app:
        yield app


def test_the_sqlite_wiring_keeps_vocabularies_in_the_memory_file(
    sqlite: Api, tmp_path: Path
) -> None:
    vocabularies = sqlite.container.vocabularies
    assert isinstance(vocabularies, SqliteVocabularyStore)
    assert vocabularies.path == tmp_path / "memory.db"


def test_a_formation_under_the_enterprise_vocabulary_classifies_entities(sqlite: Api) -> None:
    ok(sqlite.put(V, {"vocabulary": DEFAULT}))
    ok(sqlite.post(FORM, ALPHAUS))
    classes, edges = graph(sqlite)
    assert classes["the user"] == "Person" and classes["Alphaus"] == "Organization"
    assert classes["Lisbon"] is None  # no declared class fits a place: no placeholder
    relations = {relation for _, relation, _ in edges}
    assert "WORKS_AT" in relations
    assert of_class(sqlite, "Person") == ["the user"]
    assert of_class(sqlite, "Organization") == ["Alphaus"]


def test_a_formation_under_a_scope_override_uses_the_override(sqlite: Api) -> None:
    ok(sqlite.put(V, {"vocabulary": DEFAULT}))
    override = {
        "entityClasses": [{"name": "User", "description": "the person talking to the bot"},
                          {"name": "Location", "description": "a city or country"}],
        "relationTypes": [{"name": "RESIDES_IN", "description": "where someone lives"}],
    }  # fmt: skip
    ok(sqlite.put(V, {"scopeId": "support-bot", "vocabulary": override}))
    ok(sqlite.post(FORM, ALPHAUS))
    classes, edges = graph(sqlite)
    assert (classes["the user"], classes["Lisbon"], classes["Alphaus"]) == (
        "User", "Location", None,
    )  # fmt: skip
    assert "RESIDES_IN" in {relation for _, relation, _ in edges}
    assert of_class(sqlite, "Person") == []
    assert of_class(sqlite, "User") == ["the user"]


def test_a_formation_under_an_empty_scope_declaration_classifies_nothing(sqlite: Api) -> None:
    ok(sqlite.put(V, {"vocabulary": DEFAULT}))
    ok(sqlite.put(V, {"scopeId": "support-bot", "vocabulary": {}}))
    ok(sqlite.post(FORM, ALPHAUS))
    classes, _ = graph(sqlite)
    assert set(classes.values()) == {None}
    assert of_class(sqlite, "Person") == []


def test_declaring_or_removing_changes_no_memory_that_exists(sqlite: Api) -> None:
    ok(sqlite.put(V, {"vocabulary": DEFAULT}))
    ok(sqlite.post(FORM, ALPHAUS))
    before = graph(sqlite)
    ok(sqlite.put(V, {"scopeId": "support-bot", "vocabulary": SUPPORT}))
    assert graph(sqlite) == before
    ok(sqlite.delete(V))
    ok(sqlite.delete(V, **scope("support-bot")))
    assert graph(sqlite) == before
    assert of_class(sqlite, "Person") == ["the user"]  # a class no vocabulary declares now


def test_it_gates_nothing_commits_and_queries_are_never_checked(sqlite: Api) -> None:
    ok(sqlite.put(V, {"vocabulary": DEFAULT}))
    commit = {"nodes": [{"nodeId": "ship", "label": "Nostromo", "nodeType": "Spaceship"}]}
    ok(sqlite.post("/v1/agents/support-bot/memory:commit", commit))
    assert of_class(sqlite, "Spaceship") == ["Nostromo"]
    assert of_class(sqlite, "Undeclared") == []


def test_a_scripted_model_classifies_with_the_declared_classes_only(tmp_path: Path) -> None:
    """The resolved vocabulary reaches the extraction prompt as data; a class it does not
    declare is dropped, leaving the entity unclassified (no placeholder)."""
    model = ScriptedModel()
    with sqlite_api(tmp_path, model) as api:
        ok(api.put(V, {"scopeId": "support-bot", "vocabulary": DEFAULT}))
        quote = "I work at Alphaus"
        model.add({"candidates": [{
            "kind": "CANDIDATE_KIND_RELATIONSHIP", "text": "the user WORKS_AT Alphaus",
            "turns": [0], "quote": quote, "attributes": {},
            "subject": {"name": "the user", "entity_class": "Person"}, "relation": "WORKS_AT",
            "object": {"name": "Alphaus", "entity_class": "Spaceship"},
        }]})  # fmt: skip
        ok(api.post(FORM, {"turns": [{"role": "TURN_ROLE_USER", "content": quote + "."}]}))
        vocabulary = read_data(model.calls[0].prompt)["vocabulary"]
        assert vocabulary["entityClasses"] == DEFAULT["entityClasses"]
        classes, edges = graph(api)
        assert classes == {"the user": "Person", "Alphaus": None}
        assert [relation for _, relation, _ in edges] == ["WORKS_AT"]


class Redeclaring:
    """The rules model, which runs `meanwhile` on its first call (mid-formation) and
    records the vocabulary each prompt carried."""

    name, region = "rules", "local"

    def __init__(self, meanwhile: Callable[[], None]) -> None:
        self._rules = RulesModel()
        self._meanwhile: Callable[[], None] | None = meanwhile
        self.vocabularies: list[Any] = []

    def generate(
        self, prompt: str, json_schema: dict[str, Any], max_output_tokens: int,
        deadline_seconds: float,
    ) -> ModelResult:  # fmt: skip
        if self._meanwhile is not None:
            meanwhile, self._meanwhile = self._meanwhile, None
            meanwhile()
        self.vocabularies.append(read_data(prompt).get("vocabulary"))
        return self._rules.generate(prompt, json_schema, max_output_tokens, deadline_seconds)


def test_a_running_formation_keeps_the_vocabulary_it_started_with(tmp_path: Path) -> None:
    holder: list[Api] = []
    model = Redeclaring(lambda: ok(holder[0].put(V, {"vocabulary": {}})))
    with sqlite_api(tmp_path, model=model) as api:
        holder.append(api)
        ok(api.put(V, {"vocabulary": DEFAULT}))
        ok(api.post(FORM, ALPHAUS))
        assert "declaration" in ok(api.get(V)) and "resolved" not in ok(api.get(V))
        assert model.vocabularies[0]["entityClasses"] == DEFAULT["entityClasses"]
        classes, _ = graph(api)
        assert classes["the user"] == "Person"  # the declaration made meanwhile waits
        ok(api.post(FORM, {"turns": [{"role": "TURN_ROLE_USER", "content": "I work at Bexo."}]}))
        assert graph(api)[0]["Bexo"] is None  # the next formation uses the new one


# destroying a scope erases its vocabulary


def test_destroying_a_scope_erases_its_vocabulary_and_nothing_else(sqlite: Api) -> None:
    for scope_id in ("bot.a", "bot.b"):
        ok(sqlite.post(f"/v1/scopes/{scope_id}/memory:commit", {"chunks": [{"text": "x"}]}))
        ok(sqlite.put(V, {"scopeId": scope_id, "vocabulary": SUPPORT}))
    ok(sqlite.put(V, {"vocabulary": DEFAULT}))
    ok(sqlite.delete("/v1/scopes/bot.a"))
    assert ok(sqlite.get(V, **scope("bot.a"))) == {"resolved": DEFAULT}
    assert sqlite.container.vocabularies.get(ENTERPRISE, "bot.a") is None
    assert "declaration" in ok(sqlite.get(V, **scope("bot.b")))
    assert "declaration" in ok(sqlite.get(V))


def test_a_scope_destroyed_and_written_again_inherits(api: Api) -> None:
    ok(api.post("/v1/scopes/bot.a/memory:commit", {"chunks": [{"text": "x"}]}))
    ok(api.put(V, {"scopeId": "bot.a", "vocabulary": {}}))
    ok(api.delete("/v1/scopes/bot.a"))
    ok(api.post("/v1/scopes/bot.a/memory:commit", {"chunks": [{"text": "x"}]}))
    assert ok(api.get(V, **scope("bot.a"))) == {}
    assert api.vocabularies.levels == {}
