"""An ADK session's events as a memory:form request: turns, observedAt and formationKey.

Roles: content of role "user" is a TURN_ROLE_USER turn, of role "model" a
TURN_ROLE_ASSISTANT turn (its text parts joined; thought parts left out). Tool events
(function calls and responses) are left out by default: Jennah's formation treats tool
input and output as what the agent read, memorable only where the agent passed it on in
its own reply, and that reply is a turn. With `tool_turns=True` they become
TURN_ROLE_TOOL_CALL / TURN_ROLE_TOOL_RESULT turns (`name {json}`), except those of the
memory tools themselves (load_memory, preload_memory): forming memory from what memory
returned would learn it back from itself.

The formation key is derived from the app, the user, the session id and the last event
formed (its id and timestamp), so adding the same session again replays the receipt
instead of forming it twice; once the session has grown, the new last event gives a new
key. observedAt is the last event's time: the same session gives the same request.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from google.adk.events.event import Event
from google.genai import types

USER = "TURN_ROLE_USER"
ASSISTANT = "TURN_ROLE_ASSISTANT"
TOOL_CALL = "TURN_ROLE_TOOL_CALL"
TOOL_RESULT = "TURN_ROLE_TOOL_RESULT"
MEMORY_TOOLS = frozenset({"load_memory", "preload_memory"})
KEY_PREFIX = "adk-"


def form_request(
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    events: Sequence[Event],
    tool_turns: bool = False,
) -> dict[str, Any] | None:
    """The memory:form body for these events; None when no event has anything to form."""
    formed = [(e, _turns(e, tool_turns)) for e in events if not e.partial]
    formed = [(event, turns) for event, turns in formed if turns]
    if not formed:
        return None
    last = formed[-1][0]
    turns = [turn for _, event_turns in formed for turn in event_turns]
    return {
        "turns": turns,
        "observedAt": _timestamp(last.timestamp),
        "formationKey": formation_key(app_name, user_id, session_id, last),
    }


def formation_key(app_name: str, user_id: str, session_id: str, last: Event) -> str:
    """adk-{sha256 of app, user, session and last event}: 68 characters whatever the ids."""
    parts = [app_name, user_id, session_id, last.id, repr(last.timestamp)]
    digest = hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()
    return KEY_PREFIX + digest


def _turns(event: Event, tool_turns: bool) -> list[dict[str, str]]:
    content = event.content
    if content is None or not content.parts:
        return []
    turns = list(_text_turn(content))
    if tool_turns:
        turns.extend(_tool_turns(content.parts))
    return turns


def _text_turn(content: types.Content) -> Iterator[dict[str, str]]:
    text = "".join(p.text for p in content.parts or [] if p.text and not p.thought)
    if text.strip():
        yield {"role": USER if content.role == "user" else ASSISTANT, "content": text}


def _tool_turns(parts: Sequence[types.Part]) -> Iterator[dict[str, str]]:
    for part in parts:
        call, result = part.function_call, part.function_response
        if call is not None and call.name not in MEMORY_TOOLS:
            yield {"role": TOOL_CALL, "content": _rendered(call.name, call.args)}
        if result is not None and result.name not in MEMORY_TOOLS:
            yield {"role": TOOL_RESULT, "content": _rendered(result.name, result.response)}


def _rendered(name: str | None, payload: dict[str, Any] | None) -> str:
    return f"{name or 'tool'} {json.dumps(payload or {}, sort_keys=True, default=str)}"


def _timestamp(seconds: float) -> str:
    """RFC 3339 in UTC with milliseconds, as the API prints times."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
