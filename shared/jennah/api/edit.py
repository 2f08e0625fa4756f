"""POST /v1/{agents|scopes}/{id}/memories/{memoryId}:edit: a person corrects one claim.

Edit = supersede (jennah.services.edit): the answer is the new claim and the old one it
superseded, each in the claim view memory:query and memory:inspect return.
"""

from __future__ import annotations

from jennah.api import dto
from jennah.api.handlers import Call, Reply, chunk_out
from jennah.services import edit as edit_service


def edit(call: Call) -> Reply:
    services, request = call.services, call.request
    command = edit_service.EditCommand(
        scope=call.scope.ref,
        memory_id=call.path["memoryId"],
        text=request.text,
        summary=request.summary,
    )
    edited = edit_service.edit(
        command, services.store, services.embedder, services.now, passes=services.passes
    )
    return Reply(
        dto.EditMemoryResponse(
            memory=chunk_out(edited.memory), superseded=chunk_out(edited.superseded)
        )
    )
