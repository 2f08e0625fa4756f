"""The ADK memory service end to end: google-adk's own Runner, driving an agent whose model
is scripted (a BaseLlm that answers from a list, no network), against a real `jnh serve`
(SQLite, hashing embedder, the rules model).

A session is stored through JennahMemoryService (memory:form), then found by ADK's
load_memory tool (memory:search) in another session; LoadBriefTool puts the brief in the
instructions; adding the same session again replays its formation and writes nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import httpx
import pytest
from google.adk.agents.llm_agent import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.sessions.session import Session
from google.adk.tools.load_memory_tool import LoadMemoryResponse, load_memory_tool
from google.genai import types
from pydantic import Field

from jennah.adk import JennahMemoryService, LoadBriefTool
from jennah.adk.brief import BRIEF_FRAME
from tests.e2e.conftest import Server, serving

pytestmark = pytest.mark.slow

APP = "concierge"
USER = "ada"
AGENT_ID = f"{APP}.{USER}"  # the default template {app_name}.{user_id}


class ScriptedLlm(BaseLlm):
    """A model that answers each request with the next scripted content, and keeps the
    requests it was sent."""

    model: str = "scripted"
    script: list[types.Content] = Field(default_factory=list)
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request.model_copy(deep=True))
        yield LlmResponse(content=self.script.pop(0))


def said(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])


def calls(name: str, **args: Any) -> types.Content:
    call = types.FunctionCall(name=name, args=args)
    return types.Content(role="model", parts=[types.Part(function_call=call)])


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("adk")) as running:
        yield running


@pytest.fixture
def memory(server: Server) -> JennahMemoryService:
    return JennahMemoryService(endpoint=server.endpoint, token=token(server))


def token(server: Server) -> str:
    return server.ok("auth", "print-token").strip()


def claims(server: Server) -> list[dict[str, Any]]:
    """The workspace's memory card: every claim formation wrote."""
    answer = httpx.get(
        f"{server.endpoint}/v1/agents/{AGENT_ID}/memories",
        headers={"Authorization": f"Bearer {token(server)}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json().get("memories", [])
    return found


async def converse(
    runner: Runner, sessions: InMemorySessionService, session_id: str, message: str
) -> Session:
    """One user message through ADK's Runner; the session as ADK stored it."""
    await sessions.create_session(app_name=APP, user_id=USER, session_id=session_id)
    async for _ in runner.run_async(user_id=USER, session_id=session_id, new_message=user(message)):
        pass
    stored = await sessions.get_session(app_name=APP, user_id=USER, session_id=session_id)
    assert stored is not None
    return stored


def test_a_session_is_stored_searched_and_briefed(
    server: Server, memory: JennahMemoryService
) -> None:
    asyncio.run(_stored_searched_and_briefed(server, memory))


async def _stored_searched_and_briefed(server: Server, memory: JennahMemoryService) -> None:
    sessions = InMemorySessionService()
    model = ScriptedLlm(script=[said("Noted: Lisbon, and Acme.")])
    agent = LlmAgent(name="concierge", model=model, instruction="You are a concierge.")
    runner = Runner(agent=agent, app_name=APP, session_service=sessions, memory_service=memory)

    first = await converse(runner, sessions, "s1", "I live in Lisbon and I work at Acme.")
    # Nothing formed yet: the workspace does not exist, and that is no error.
    assert (await memory.search_memory(app_name=APP, user_id=USER, query="Lisbon")).memories == []
    await memory.add_session_to_memory(first)
    formed = claims(server)
    assert any("Lisbon" in c["summary"] for c in formed), formed

    # Adding the same session again replays the formation (same formationKey): nothing new.
    replay = await memory.form(APP, USER, first.id, first.events)
    assert replay is not None and replay["replay"] is True
    await memory.add_session_to_memory(first)
    assert claims(server) == formed

    # Another session: the brief is in the instructions, and load_memory finds Lisbon.
    model = ScriptedLlm(script=[calls("load_memory", query="where does the user live"),
                                said("You live in Lisbon.")])  # fmt: skip
    agent = LlmAgent(name="concierge", model=model, instruction="You are a concierge.",
                     tools=[load_memory_tool, LoadBriefTool(memory)])  # fmt: skip
    runner = Runner(agent=agent, app_name=APP, session_service=sessions, memory_service=memory)
    second = await converse(runner, sessions, "s2", "Where do I live?")

    instruction = str(model.requests[0].config.system_instruction)
    assert instruction.startswith("You are a concierge.")
    assert BRIEF_FRAME in instruction
    assert f'<memory-brief scope="{AGENT_ID}"' in instruction and "Lisbon" in instruction
    (answer,) = [
        part.function_response
        for content in model.requests[1].contents
        for part in content.parts or []
        if part.function_response is not None
    ]
    assert answer.name == "load_memory"
    loaded: LoadMemoryResponse = (answer.response or {})["result"]
    lisbon = next(m for m in loaded.memories if "Lisbon" in str(m.content.parts))
    assert lisbon.author == "memory" and lisbon.timestamp == "today"
    assert lisbon.content.parts == [types.Part(text="The user lives in Lisbon.")]
    assert lisbon.custom_metadata["ref"] == f"memory://{AGENT_ID}/{lisbon.id}"
    assert lisbon.custom_metadata["type"] and lisbon.custom_metadata["sensitivity"] == "normal"
    assert second.events[-1].content is not None
    await memory.aclose()
