"""Jennah as google-adk's memory service: swap `InMemoryMemoryService()` for
`JennahMemoryService()` and the Runner's memory is Jennah's.

Scope: each (app_name, user_id) is one Jennah agent workspace, named by `agent_id`
(a template with {app_name} and {user_id}, or a function of the two); the default
"{app_name}.{user_id}" keeps each user's memory apart. The workspace is created by its
first formation; the caller's credentials must reach it (the server enforces that).

- add_session_to_memory / add_events_to_memory: memory:form with the events as turns
  (jennah.adk.conversation says how events become turns, observedAt and formationKey).
  Formation extracts the facts worth keeping and reconciles them with what the
  workspace holds; adding a session again after it grew forms it again, and facts
  already known write nothing.
- search_memory: memory:search; each candidate is a MemoryEntry whose content is the
  claim's summary (role "user", author "memory"), its id the claim's memoryId,
  its timestamp its age as Jennah tells it ("today", "3 days ago"), and custom_metadata
  its memory:// reference, type, age and sensitivity. A workspace not yet formed
  answers no memories.
- delete_memory and add_memory stay unsupported (ADK's NotImplementedError): an agent
  does not rewrite or delete memory; people do, through the memory card.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import httpx
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from typing_extensions import override

from jennah.adk._api import JennahApi
from jennah.adk.conversation import form_request
from jennah.errors import NotFound

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session

DEFAULT_AGENT_ID = "{app_name}.{user_id}"
MEMORY_AUTHOR = "memory"
AgentIdFor = Callable[[str, str], str]


class JennahMemoryService(BaseMemoryService):
    """google-adk's BaseMemoryService over the Jennah HTTP API.

    `endpoint` and `token` default to where `jnh` finds them (JENNAH_ENDPOINT,
    JENNAH_TOKEN, `jnh auth login`, the local server's credential); `max_items` bounds a
    search (1-20); `tool_turns` also forms tool calls and results (see
    jennah.adk.conversation).
    """

    def __init__(
        self,
        *,
        endpoint: str | None = None,
        token: str | None = None,
        agent_id: str | AgentIdFor = DEFAULT_AGENT_ID,
        max_items: int | None = None,
        tool_turns: bool = False,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.api = JennahApi(endpoint=endpoint, token=token, transport=transport)
        self._agent_id = agent_id
        self._max_items = max_items
        self._tool_turns = tool_turns

    def agent_id(self, app_name: str, user_id: str) -> str:
        """The agent workspace that holds this user's memory of this app."""
        if callable(self._agent_id):
            return self._agent_id(app_name, user_id)
        return self._agent_id.format(app_name=app_name, user_id=user_id)

    @override
    async def add_session_to_memory(self, session: Session) -> None:
        await self._form(session.app_name, session.user_id, session.id, session.events)

    @override
    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Form these events alone (a delta); no custom_metadata key is read."""
        await self._form(app_name, user_id, session_id or "", events)

    async def form(
        self, app_name: str, user_id: str, session_id: str, events: Sequence[Event]
    ) -> dict[str, Any] | None:
        """memory:form for these events: the receipt (`replay: true` when the formation
        key had formed them already), or None when they held no text to form."""
        body = form_request(
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            events=events,
            tool_turns=self._tool_turns,
        )
        if body is None:
            return None
        return await self.api.form(self.agent_id(app_name, user_id), body)

    @override
    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        if not query.strip():
            return SearchMemoryResponse()
        body: dict[str, Any] = {"query": query}
        if self._max_items is not None:
            body["maxItems"] = self._max_items
        try:
            found = await self.api.search(self.agent_id(app_name, user_id), body)
        except NotFound:  # no formation yet: the workspace does not exist
            return SearchMemoryResponse()
        return SearchMemoryResponse(memories=[_entry(c) for c in found.get("candidates", [])])

    async def aclose(self) -> None:
        await self.api.aclose()

    async def _form(
        self, app_name: str, user_id: str, session_id: str, events: Sequence[Event]
    ) -> None:
        await self.form(app_name, user_id, session_id, events)


def _entry(candidate: Mapping[str, Any]) -> MemoryEntry:
    ref = str(candidate["ref"])
    age = str(candidate.get("age", ""))
    return MemoryEntry(
        id=ref.rsplit("/", 1)[-1],
        content=types.Content(role="user", parts=[types.Part(text=str(candidate["summary"]))]),
        author=MEMORY_AUTHOR,
        timestamp=_when(age),
        custom_metadata={
            "ref": ref,
            "type": candidate.get("type"),
            "age": age,
            "sensitivity": candidate.get("sensitivity"),
        },
    )


def _when(age: str) -> str | None:
    """The age as a time an agent reads: "today", or "3 days ago"."""
    if not age:
        return None
    return age if age == "today" else f"{age} ago"
