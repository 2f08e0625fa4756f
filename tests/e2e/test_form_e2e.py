"""memory:form end to end: a real `jnh serve` (SQLite, hashing embedder, the rules model)
driven by real `jnh` processes: form the spec's Tokyo/Alphaus conversation, query it
back, revise it, replay a formation, and read its execution-log step."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import Server

pytestmark = pytest.mark.slow

AGENT = "support-bot"
TOKYO = {
    "turns": [
        {"role": "TURN_ROLE_USER", "content": "I live in Tokyo and I work at Alphaus."},
        {"role": "TURN_ROLE_ASSISTANT", "content": "Noted. Anything else about your setup?"},
        {"role": "TURN_ROLE_USER", "content": "I prefer dark mode in every tool."},
    ]
}
OSAKA_YAML = """\
turns:
  - role: TURN_ROLE_USER
    content: I moved to Osaka.
"""


@pytest.fixture(scope="module")
def tokyo(server: Server) -> dict[str, Any]:
    path = server.file("tokyo.json", json.dumps(TOKYO))
    receipt: dict[str, Any] = server.json("agents", "memory", "form", AGENT, "--from-file", path)
    return receipt


@pytest.fixture(scope="module")
def osaka(server: Server, tokyo: dict[str, Any]) -> dict[str, Any]:
    path = server.file("osaka.yaml", OSAKA_YAML)
    receipt: dict[str, Any] = server.json("agents", "memory", "form", AGENT, "-f", path)
    return receipt


def test_the_tokyo_conversation_forms_new_memory(tokyo: dict[str, Any]) -> None:
    decided = {c["text"]: c["decision"] for c in tokyo["candidates"]}
    assert decided["The user lives in Tokyo."] == "MEMORY_DECISION_NEW"
    assert decided["The user works at Alphaus."] == "MEMORY_DECISION_NEW"
    assert decided["The user prefers dark mode in every tool."] == "MEMORY_DECISION_NEW"
    assert not any("Anything else" in text for text in decided)  # the offer forms nothing
    assert (tokyo["executionLogRows"], tokyo["formationUnits"], tokyo["replay"]) == (
        "1", "1", False,
    )  # fmt: skip
    assert tokyo["commitTimestamp"].endswith("Z")


def test_formed_memory_is_queried_back(server: Server, tokyo: dict[str, Any]) -> None:
    body = server.json("agents", "memory", "query", AGENT, "--text", "where does the user live",
                       "--top-k", "10")  # fmt: skip
    texts = [r["text"] for r in body["semantic"]["results"]]
    assert "The user lives in Tokyo." in texts and "The user works at Alphaus." in texts
    graph = server.json("agents", "memory", "query", AGENT, "--graph-json", json.dumps(
        {"start": {"filters": [{"key": "Label", "value": "the user"}]},
         "traversal": {"depth": 1}}))  # fmt: skip
    reached = {n["label"] for n in graph["graph"]["nodes"] if n["depth"] == 1}
    assert reached == {"Tokyo", "Alphaus"}


def test_moving_to_osaka_revises_where_the_user_lives(
    server: Server, osaka: dict[str, Any]
) -> None:
    revised = [c for c in osaka["candidates"] if c["decision"] == "MEMORY_DECISION_REVISED"]
    assert revised and all(c["matchedId"] for c in revised)
    assert int(osaka["chunkSupersessions"]) + int(osaka["edgeSupersessions"]) >= 1
    table = server.ok("agents", "memory", "inspect", AGENT, "--graph", "--all-history")
    assert "Osaka" in table and "Tokyo" in table  # history stays


def test_running_the_same_command_again_replays(server: Server, osaka: dict[str, Any]) -> None:
    path = server.file("osaka.yaml", OSAKA_YAML)
    again = server.json("agents", "memory", "form", AGENT, "-f", path)
    assert again["replay"] is True
    assert {k: v for k, v in again.items() if k != "replay"} == {
        k: v for k, v in osaka.items() if k != "replay"
    }
    table = server.ok("agents", "memory", "form", AGENT, "-f", path)
    assert "replay: yes" in table and "REVISED" in table


def test_the_step_and_one_turn_are_readable(server: Server, tokyo: dict[str, Any]) -> None:
    chunks = server.json("agents", "memory", "inspect", AGENT, "--all-history")["chunks"]
    tokyo_chunk = next(c for c in chunks if c["text"] == "The user lives in Tokyo.")
    step_id = tokyo_chunk["metadata"]["jennah.source_step"]
    assert tokyo_chunk["metadata"]["jennah.source_turns"] == "0"
    whole = server.ok("agents", "memory", "step", AGENT, step_id)
    for turn in TOKYO["turns"]:
        assert turn["content"] in whole
    first = server.ok("agents", "memory", "step", AGENT, step_id, "--turn", "0")
    assert first == "[turn 0] user:\nI live in Tokyo and I work at Alphaus.\n"
    out_of_range = server.jnh("agents", "memory", "step", AGENT, step_id, "--turn", "3")
    assert out_of_range.returncode == 3 and "out of range" in out_of_range.stderr


def test_there_is_no_scopes_form_route(server: Server, tokyo: dict[str, Any]) -> None:
    token = server.ok("auth", "print-token").strip()
    answer = httpx.post(f"{server.endpoint}/v1/scopes/{AGENT}/memory:form", json=TOKYO,
                        headers={"Authorization": f"Bearer {token}"}, timeout=30)  # fmt: skip
    assert answer.status_code == 404
    assert answer.json()["error"]["status"] == "NOT_FOUND"
