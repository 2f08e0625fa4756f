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

from jennah.api import dto
from jennah.api.handlers import Call, Reply, chunk_out
from jennah.domain.suppression import Suppression
from jennah.services import forgetting, paging

# The wire shapes live in dto (a client imports them without the services).
ForgetRequest = dto.ForgetRequest
SuppressionResource = dto.SuppressionResource
ForgetResponse = dto.ForgetResponse
ForgetGroupRequest = dto.ForgetGroupRequest
ForgetGroupResponse = dto.ForgetGroupResponse
ListSuppressionsParams = dto.ListSuppressionsParams
ListSuppressionsResponse = dto.ListSuppressionsResponse


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
