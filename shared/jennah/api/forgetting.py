"""Forget = retract + suppress over HTTP (issue 17): the request and answer shapes and the
handlers of

- POST …/memories/{memoryId}:forget        -> {"memory": claim, "suppression": {...}}
- POST …/memories:forgetGroup              -> {"count", "memoryIds", "suppressions", ...}
- GET  …/suppressions                      -> a page of suppression rules (AIP-158)
- DELETE …/suppressions/{suppressionId}    -> {}

The claim reads as memory:query and memory:inspect print it (`dto.Chunk`). The rules are
in `services.forgetting`.
"""

from __future__ import annotations

from pydantic import Field

from jennah.api import dto
from jennah.api.handlers import Call, Reply, chunk_out
from jennah.domain.models import MemoryType
from jennah.domain.suppression import MAX_GROUP_CLAIMS, Suppression
from jennah.services import forgetting, paging


class ForgetRequest(dto.WireRequest):
    """memory:forget takes no field; an empty body (or none) is the request."""


class SuppressionResource(dto.WireResponse):
    """A suppression rule: formation answers a candidate with the same words as the
    forgotten claim, or a paraphrase of it, as REJECTED naming this rule."""

    id: str = Field(description="sup_ and 16 hex digits")
    memory_id: str = Field(description="The forgotten (retracted) claim")
    about: str = ""
    summary: str = ""
    text: str = Field(description="The forgotten claim's body")
    created_at: dto.Timestamp | None = None
    created_by: str = Field(default="", description="The principal who forgot it")


class ForgetResponse(dto.WireResponse):
    memory: dto.Chunk = Field(description="The claim as stored now: status retracted")
    suppression: SuppressionResource


class ForgetGroupRequest(dto.WireRequest):
    """Exactly one of appliesTo, about or type picks the group."""

    applies_to: str | None = Field(
        default=None, description="A graph node id: the claims whose appliesTo names it"
    )
    about: str | None = Field(
        default=None,
        description="The claims about this (compared ignoring case and spacing)",
        max_length=2000,
    )
    type: MemoryType | None = Field(default=None, description="The claims of this type")
    validate_only: bool = Field(default=False, description="Count the group and write nothing")
    expected_count: dto.Int32 | None = Field(
        default=None,
        description="Required unless validateOnly: the count a validateOnly call answered; "
        "another count now is FAILED_PRECONDITION GROUP_CHANGED and nothing is written",
        json_schema_extra={"minimum": 0},
    )


class ForgetGroupResponse(dto.WireResponse):
    count: dto.Int32 = Field(
        description="The active, dormant and expired claims of the group (retracted now, "
        "unless validateOnly)"
    )
    max_count: dto.Int32 = Field(
        default=MAX_GROUP_CLAIMS, description="The most claims one forgetGroup retracts"
    )
    validate_only: bool = False
    memory_ids: list[str] = Field(
        default_factory=list, description="The group's claims by id (at most maxCount)"
    )
    suppressions: list[SuppressionResource] = Field(
        default_factory=list, description="One per retracted claim; none for validateOnly"
    )


class ListSuppressionsParams(dto.PageParams):
    """pageSize and pageToken (AIP-158)."""


class ListSuppressionsResponse(dto.WireResponse):
    """A page of the scope's suppression rules, ordered by id."""

    suppressions: list[SuppressionResource] = Field(default_factory=list)
    next_page_token: str | None = Field(
        default=None, description="Pass as pageToken for the next page; absent on the last page"
    )


def forget(call: Call) -> Reply:
    done = forgetting.forget(_context(call), call.path["memoryId"])
    return Reply(
        ForgetResponse(memory=chunk_out(done.memory), suppression=suppression_out(done.suppression))
    )


def forget_group(call: Call) -> Reply:
    request: ForgetGroupRequest = call.request
    selector = forgetting.GroupSelector(
        applies_to=request.applies_to, about=request.about, type=request.type
    )
    done = forgetting.forget_group(
        _context(call),
        selector,
        validate_only=request.validate_only,
        expected_count=request.expected_count,
    )
    return Reply(
        ForgetGroupResponse(
            count=done.count,
            validate_only=request.validate_only,
            memory_ids=done.memory_ids,
            suppressions=[suppression_out(rule) for rule in done.suppressions],
        )
    )


def list_suppressions(call: Call) -> Reply:
    params: ListSuppressionsParams = call.request
    page = forgetting.list_suppressions(
        call.services.store,
        call.scope.ref,
        paging.Paging(params.page_size, params.page_token),
        call.caller.principal,
    )
    return Reply(
        ListSuppressionsResponse(
            suppressions=[suppression_out(rule) for rule in page.items],
            next_page_token=page.next_page_token,
        )
    )


def delete_suppression(call: Call) -> Reply:
    forgetting.delete_suppression(call.services.store, call.scope.ref, call.path["suppressionId"])
    return Reply(dto.Empty())


def suppression_out(rule: Suppression) -> SuppressionResource:
    return SuppressionResource(
        id=rule.id,
        memory_id=rule.memory_id,
        about=rule.about,
        summary=rule.summary,
        text=rule.text,
        created_at=rule.created_at,
        created_by=rule.created_by,
    )


def _context(call: Call) -> forgetting.Forgetting:
    services = call.services
    return forgetting.Forgetting(
        store=services.store,
        embedder=services.embedder,
        scope=call.scope.ref,
        principal=call.caller.principal,
        now=services.now,
        passes=services.passes,
    )
