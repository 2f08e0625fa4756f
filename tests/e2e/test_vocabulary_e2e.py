"""The memory vocabulary end to end: a real `jnh serve` (SQLite, hashing embedder, the
rules model) driven by real `jnh` processes. Declare the enterprise default, read a
scope that inherits it, turn classification off at the scope and restore inheritance,
form a conversation into classified entities, see them in `inspect --graph` and find
them by class; an API key reads but is refused declaring before anything is sent."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.e2e.conftest import Server

pytestmark = pytest.mark.slow

AGENT = "vocab-bot"
DECLARE_DEFAULT = (
    "vocabulary", "declare", "--yes",
    "--class", "Person=an individual human being, including colleagues",
    "--class", "Organization=a company, employer, school or agency",
    "--relation", "WORKS_AT=employment of a person by an organization",
    "--signature", "WORKS_AT=Person:Organization",
)  # fmt: skip
INHERITS = [
    f"LEVEL        scope {AGENT}",
    "DECLARATION  none: this scope inherits the enterprise default",
    "RESOLVES     the enterprise default",
]
EMPTY = [
    f"LEVEL        scope {AGENT}",
    "DECLARATION  empty: classification is off at this level",
    "RESOLVES     nothing: classification is off",
]
TURNS = {"turns": [{"role": "TURN_ROLE_USER", "content": "I work at Alphaus."}]}


def test_the_vocabulary_flow(server: Server) -> None:
    declared = server.jnh(*DECLARE_DEFAULT)
    assert declared.returncode == 0, declared.stderr
    assert "adds class Person" in declared.stderr
    assert server.ok("vocabulary", "get", "--scope", AGENT).splitlines()[:3] == INHERITS

    server.ok("vocabulary", "declare", "--scope", AGENT, "--none", "--yes")
    assert server.ok("vocab", "get", "--scope", AGENT).splitlines() == EMPTY
    empty = server.json("vocabulary", "get", "--scope", AGENT)
    assert empty["declaration"]["entityClasses"] == [] and "resolved" not in empty

    server.ok("vocabulary", "remove", "--scope", AGENT, "--yes")
    assert server.ok("vocabulary", "get", "--scope", AGENT).splitlines()[:3] == INHERITS
    assert server.ok("vocabulary", "get", "--scope", AGENT, "-o", "name").split() == [
        "Person", "Organization",
    ]  # fmt: skip
    inherited = server.json("vocabulary", "get", "--scope", AGENT)
    assert "declaration" not in inherited and len(inherited["resolved"]["entityClasses"]) == 2

    turns = server.file("turns.json", json.dumps(TURNS))
    server.ok("agents", "memory", "form", AGENT, "--from-file", turns)
    table = server.ok("scopes", "memory", "inspect", AGENT, "--graph").splitlines()
    header = next(line for line in table if line.startswith("NODE_ID"))
    assert header.split() == ["NODE_ID", "LABEL", "CLASS"]
    rows = [line.split() for line in table if line.startswith("ent_")]
    classes = {" ".join(row[1:-1]): row[-1] for row in rows}  # NODE_ID, the label, CLASS
    assert classes == {"the user": "Person", "Alphaus": "Organization"}
    people = server.json("agents", "memory", "query", AGENT, "--graph-json", json.dumps(
        {"start": {"filters": [{"key": "NodeType", "value": "Person"}]}}))  # fmt: skip
    assert [n["label"] for n in people["graph"]["nodes"]] == ["the user"]
    works = server.json("agents", "memory", "query", AGENT, "--graph-json", json.dumps(
        {"start": {"filters": [{"key": "NodeType", "value": "Person"}]},
         "traversal": {"relations": ["WORKS_AT"], "depth": 1}}))  # fmt: skip
    reached = {n["label"]: n.get("nodeType") for n in works["graph"]["nodes"]}
    assert reached == {"the user": "Person", "Alphaus": "Organization"}


def test_an_api_key_reads_but_is_refused_locally_when_declaring(server: Server) -> None:
    root_key = server.json("keys", "create", "--role", "root")["keyString"]
    for args in (("declare", "--class", "A=", "--yes"), ("remove", "--yes")):
        refused = server.jnh("vocabulary", *args, "--token", root_key)
        assert refused.returncode == 5 and "jnh sent nothing" in refused.stderr
    member_key = server.json("keys", "create", "--role", "member", "--agent-selector", "*")[
        "keyString"
    ]
    assert server.jnh("vocabulary", "get", "--token", member_key).returncode == 0


def test_a_scope_id_query_parameter_on_put_lands_at_the_enterprise_level(server: Server) -> None:
    token = server.ok("auth", "print-token").strip()
    response = httpx.put(
        f"{server.endpoint}/v1/memory/vocabulary",
        params={"scopeId": "query.scope"},
        headers={"Authorization": f"Bearer {token}"},
        json={"vocabulary": {"entityClasses": [{"name": "Landed", "description": ""}]}},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    enterprise = server.json("vocabulary", "get")
    assert [c["name"] for c in enterprise["declaration"]["entityClasses"]] == ["Landed"]
    assert "declaration" not in server.json("vocabulary", "get", "--scope", "query.scope")
    server.ok(*DECLARE_DEFAULT)  # leave the default as the other tests declared it


def test_destroying_a_scope_erases_its_vocabulary(server: Server) -> None:
    server.ok("scopes", "create", "doomed")
    server.ok("vocabulary", "declare", "--scope", "doomed", "--none", "--yes")
    server.ok("vocabulary", "declare", "--scope", "kept", "--none", "--yes")
    server.ok("scopes", "destroy", "doomed", "--yes")
    assert "declaration" not in server.json("vocabulary", "get", "--scope", "doomed")
    assert "declaration" in server.json("vocabulary", "get", "--scope", "kept")
