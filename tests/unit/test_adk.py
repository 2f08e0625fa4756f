"""jennah.adk without a server: ADK events as memory:form turns and key, the search answer
as ADK memory entries, Google error bodies as typed errors (httpx.MockTransport)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from google.adk.events.event import Event
from google.genai import types

from jennah.adk import JennahMemoryService
from jennah.adk.conversation import form_request
from jennah.errors import InvalidArgument, NotFound

SESSION = {"app_name": "app", "user_id": "ada", "session_id": "s1"}


def event(role: str, *parts: types.Part, id: str = "e", at: float = 1_700_000_000.0) -> Event:
    author = "user" if role == "user" else "agent"
    return Event(
        id=id, author=author, timestamp=at, content=types.Content(role=role, parts=list(parts))
    )


def text(value: str, thought: bool = False) -> types.Part:
    return types.Part(text=value, thought=thought or None)


def call(name: str, **args: Any) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args))


def result(name: str, **response: Any) -> types.Part:
    return types.Part(function_response=types.FunctionResponse(name=name, response=response))


CONVERSATION = [
    event("user", text("I live in Lisbon."), id="e1", at=1_700_000_000.0),
    event(
        "model", text("thinking about it", thought=True), call("weather", city="Lisbon"), id="e2"
    ),
    event("user", result("weather", sky="clear"), id="e3"),
    event("model", call("load_memory", query="home"), id="e4"),
    event("user", result("load_memory", memories=["The user lives in Porto."]), id="e5"),
    event("model", text("Noted, "), text("Lisbon."), id="e6", at=1_700_000_060.25),
]


def test_user_and_model_text_become_user_and_assistant_turns_tool_events_left_out() -> None:
    body = form_request(events=CONVERSATION, **SESSION)
    assert body is not None
    assert body["turns"] == [
        {"role": "TURN_ROLE_USER", "content": "I live in Lisbon."},
        {"role": "TURN_ROLE_ASSISTANT", "content": "Noted, Lisbon."},
    ]
    assert body["observedAt"] == "2023-11-14T22:14:20.250Z"  # the last formed event's time


def test_tool_turns_keep_tool_calls_and_results_but_never_the_memory_tools() -> None:
    body = form_request(events=CONVERSATION, tool_turns=True, **SESSION)
    assert body is not None
    assert body["turns"] == [
        {"role": "TURN_ROLE_USER", "content": "I live in Lisbon."},
        {"role": "TURN_ROLE_TOOL_CALL", "content": 'weather {"city": "Lisbon"}'},
        {"role": "TURN_ROLE_TOOL_RESULT", "content": 'weather {"sky": "clear"}'},
        {"role": "TURN_ROLE_ASSISTANT", "content": "Noted, Lisbon."},
    ]


def test_the_formation_key_is_the_sessions_and_its_last_events() -> None:
    key = form_request(events=CONVERSATION, **SESSION)["formationKey"]  # type: ignore[index]
    assert key.startswith("adk-") and len(key) == 68
    again = form_request(events=[e.model_copy() for e in CONVERSATION], **SESSION)
    assert again is not None and again["formationKey"] == key
    grown = [*CONVERSATION, event("user", text("I work at Acme."), id="e7")]
    assert form_request(events=grown, **SESSION)["formationKey"] != key  # type: ignore[index]
    for other in ({"app_name": "b"}, {"user_id": "bob"}, {"session_id": "s2"}):
        body = form_request(events=CONVERSATION, **(SESSION | other))
        assert body is not None and body["formationKey"] != key, other


def test_nothing_to_form_sends_nothing() -> None:
    silent = [event("model", call("weather")), event("user", text("  ")), Event(id="x", author="a")]
    assert form_request(events=silent, **SESSION) is None
    partial = event("user", text("I live in Lisbon."))
    partial.partial = True
    assert form_request(events=[partial], **SESSION) is None


def service(handler: Any, **options: Any) -> JennahMemoryService:
    transport = httpx.MockTransport(handler)
    return JennahMemoryService(endpoint="http://jennah", token="t", transport=transport, **options)


def google_error(code: int, status: str, reason: str | None = None) -> httpx.Response:
    details = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason,
                "domain": "jennah", "metadata": {"field": "query"}}] if reason else []  # fmt: skip
    body = {"error": {"code": code, "status": status, "message": "bad", "details": details}}
    return httpx.Response(code, json=body)


def test_search_answers_adk_memory_entries_from_the_candidates() -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        candidate = {"ref": "memory://app.ada/chk_1", "summary": "The user lives in Lisbon.",
                     "type": "fact", "age": "3 days", "sensitivity": "normal"}  # fmt: skip
        return httpx.Response(200, json={"candidates": [candidate], "tokenCount": 9, "text": ""})

    memory = service(answer, agent_id=lambda app, user: f"{app}-{user}", max_items=3)
    found = asyncio.run(memory.search_memory(app_name="app", user_id="ada", query="home?"))
    (entry,) = found.memories
    assert entry.id == "chk_1" and entry.author == "memory" and entry.timestamp == "3 days ago"
    assert entry.content.parts == [types.Part(text="The user lives in Lisbon.")]
    assert entry.custom_metadata["ref"] == "memory://app.ada/chk_1"
    assert sent[0].url.path == "/v1/agents/app-ada/memory:search"
    assert sent[0].headers["Authorization"] == "Bearer t"
    assert json.loads(sent[0].content) == {"query": "home?", "maxItems": 3}


def test_a_workspace_never_formed_is_no_memories_but_other_errors_are_raised() -> None:
    missing = service(lambda request: google_error(404, "NOT_FOUND"))
    found = asyncio.run(missing.search_memory(app_name="app", user_id="ada", query="home?"))
    assert found.memories == []
    refused = service(lambda request: google_error(400, "INVALID_ARGUMENT", "QUERY_TOO_LONG"))
    with pytest.raises(InvalidArgument) as raised:
        asyncio.run(refused.search_memory(app_name="app", user_id="ada", query="home?"))
    assert raised.value.reason == "QUERY_TOO_LONG"
    assert raised.value.metadata == {"field": "query"}
    with pytest.raises(NotFound):  # forming is never silently skipped
        asyncio.run(missing.add_events_to_memory(app_name="a", user_id="u", events=CONVERSATION))
