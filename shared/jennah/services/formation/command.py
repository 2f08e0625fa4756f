"""What a formation is asked to do, and the bounds checked before anything is spent.

Every check here runs before the first model call, so a refused request uses
no formation units. Input is refused, never truncated.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field

from jennah.domain.formation import (
    MAX_FORMATION_KEY_LENGTH,
    MAX_TURNS,
    RenderedConversation,
    Turn,
    is_blank,
)
from jennah.domain.models import ScopeRecord, ScopeRef
from jennah.errors import InvalidArgument

DEFAULT_INPUT_TOKEN_CAP = 16_384  # trial, Pro, Scale and Team; the route passes the plan's
DEFAULT_DEADLINE_SECONDS = 120.0  # per model call
DEFAULT_MAX_OUTPUT_TOKENS = 32_768  # per model call (Free's bound)
BYTES_PER_TOKEN = 4
# How far ahead of the receipt time an observedAt is taken as the client's clock skew
# (and read as the receipt time) rather than refused as the future.
OBSERVED_AT_SKEW = timedelta(minutes=5)


class FormationCommand(BaseModel):
    """One memory:form request, as the route or the CLI hands it to `form`.

    `registration` registers the scope in the formation's commit when it writes
    anything. `vocabulary` is the resolved vocabulary (entityClasses and
    relationTypes, as the vocabulary API returns it), resolved when the
    formation starts; None means classification is off. `deadline_seconds` and
    `max_output_tokens` bound each model call; `output_token_budget`, when set,
    bounds the output of all of them together (on Free, what the formation
    reserved of the day's output tokens). `caller` is
    carried for usage metering; formation itself does not read it. An
    `observed_at` without a time zone is taken to be UTC; one up to
    OBSERVED_AT_SKEW later than the receipt time is read as the receipt time,
    one later still is refused.
    """

    scope: ScopeRef
    registration: ScopeRecord | None = None
    caller: str = ""  # user:<id> or api_key:<id>
    turns: list[Turn] = Field(default_factory=list)
    observed_at: datetime | None = None
    formation_key: str | None = None
    input_token_cap: int = DEFAULT_INPUT_TOKEN_CAP
    vocabulary: dict[str, Any] | None = None
    deadline_seconds: float = DEFAULT_DEADLINE_SECONDS
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    output_token_budget: int | None = None


def estimate_input_tokens(rendered: RenderedConversation) -> int:
    """The input-token estimate a request is bounded by: the rendered conversation's
    UTF-8 bytes divided by 4, rounded up (an over-estimate for English text, so a
    request under the cap is not refused by the model for its size)."""
    return math.ceil(len(rendered.tool_input.encode("utf-8")) / BYTES_PER_TOKEN)


def utc(value: datetime) -> datetime:
    """`value` in UTC; a naive datetime is taken to be UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def check_request(command: FormationCommand, received_at: datetime) -> None:
    """INVALID_ARGUMENT, naming the bound or field, for a request formation refuses."""
    _check_turns(command.turns)
    _check_formation_key(command.formation_key)
    observed_at = command.observed_at
    if observed_at is not None and utc(observed_at) - received_at > OBSERVED_AT_SKEW:
        minutes = int(OBSERVED_AT_SKEW.total_seconds() // 60)
        raise InvalidArgument(
            f"observedAt {utc(observed_at).isoformat()} is more than {minutes} "
            f"minutes later than the time the request was received "
            f"({received_at.isoformat()}); a conversation cannot be observed in the future "
            f"(up to {minutes} minutes ahead is taken as clock skew and read as the receipt "
            "time)",
            field="observedAt",
        )


def observed_clock(observed_at: datetime | None, received_at: datetime) -> datetime | None:
    """When the conversation took place, in UTC: observedAt, or the receipt time for one
    ahead of it (clock skew, within OBSERVED_AT_SKEW once checked); None without one."""
    return None if observed_at is None else min(utc(observed_at), received_at)


def check_input_cap(command: FormationCommand, rendered: RenderedConversation) -> None:
    """INVALID_ARGUMENT naming the plan's cap when the conversation is over it."""
    tokens = estimate_input_tokens(rendered)
    if tokens > command.input_token_cap:
        raise InvalidArgument(
            f"the conversation is {tokens:,} input tokens (estimated as its rendered UTF-8 "
            f"bytes / {BYTES_PER_TOKEN}), which exceeds your plan's input cap of "
            f"{command.input_token_cap:,} tokens; split it across several requests",
            reason="FORMATION_INPUT_CAP",
            metadata={"inputTokens": str(tokens), "inputTokenCap": str(command.input_token_cap)},
            field="turns",
        )


def _check_turns(turns: list[Turn]) -> None:
    if not turns:
        raise InvalidArgument(
            f"turns is empty: a formation takes 1 to {MAX_TURNS} turns", field="turns"
        )
    if len(turns) > MAX_TURNS:
        raise InvalidArgument(
            f"the request has {len(turns)} turns; at most {MAX_TURNS} turns are allowed per "
            "formation: split the conversation across several requests",
            field="turns",
        )
    if all(is_blank(turn) for turn in turns):
        raise InvalidArgument(
            "the conversation has no content: every turn is blank, so there is nothing to "
            "form memory from (a blank turn, such as an assistant turn that only called a "
            "tool, is accepted beside turns with content)",
            field="turns",
        )


def _check_formation_key(key: str | None) -> None:
    if key is None:
        return
    if not key:
        raise InvalidArgument("formationKey must not be empty", field="formationKey")
    if len(key) > MAX_FORMATION_KEY_LENGTH:
        raise InvalidArgument(
            f"formationKey is {len(key)} characters; at most {MAX_FORMATION_KEY_LENGTH} "
            "are allowed",
            field="formationKey",
        )
