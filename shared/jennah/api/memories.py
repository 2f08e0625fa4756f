"""Handlers of the reads a person or an agent makes of memory (issue 17): one whole claim
(read_memory), a conversation excerpt (read_conversation_excerpt) and the memory card.

`jennah.api.routes` has opened the scope (agent.memory:read and reach, as memory:query)
before these run.
"""

from __future__ import annotations

from datetime import datetime

from jennah.api import dto
from jennah.api.handlers import Call, Reply, chunk_out
from jennah.domain import claims, okf
from jennah.domain.models import MemoryRecord
from jennah.domain.references import memory_ref
from jennah.services import card, excerpt, read_memory
from jennah.services.paging import Paging


def get_memory(call: Call) -> Reply:
    scope = call.scope.ref
    view = read_memory.read_claim(call.services.store, scope, call.path["memoryId"])
    return Reply(
        dto.ClaimResponse(
            ref=view.ref,
            claim=chunk_out(view.claim),
            lineage=dto.ClaimLineage(
                supersedes=[_link(scope.scope_id, r) for r in view.supersedes],
                superseded_by=[_link(scope.scope_id, r) for r in view.superseded_by],
            ),
            okf=view.okf,
        )
    )


def read_excerpt(call: Call) -> Reply:
    request: dto.ReadExcerptRequest = call.request
    found = excerpt.read_excerpt(call.services.store, call.scope.ref, request.ref)
    return Reply(
        dto.ReadExcerptResponse(
            ref=found.ref,
            step_id=found.step_id,
            turns=[
                dto.ExcerptTurnOut(number=t.number, role=t.role.value, text=t.text)
                for t in found.turns
            ],
            turn_count=found.turn_count,
        )
    )


def list_memories(call: Call) -> Reply:
    params: dto.ListMemoriesParams = call.request
    services, scope = call.services, call.scope.ref
    page = card.list_card(
        services.store, scope, params.filter, Paging(params.page_size, params.page_token)
    )
    now = services.now()
    return Reply(
        dto.ListMemoriesResponse(
            memories=[_item(scope.scope_id, r, now) for r in page.items],
            next_page_token=page.next_page_token,
        )
    )


def _item(scope_id: str, record: MemoryRecord, now: datetime) -> dto.MemoryCardItem:
    formed = okf.formed_at(record)
    assert formed is not None, "the store stamps every claim's created_at"
    return dto.MemoryCardItem(
        ref=memory_ref(scope_id, record.id),
        memory_id=record.id,
        summary=record.summary,
        about=record.about,
        applies_to=record.applies_to,
        type=record.type.value,
        status=record.status.value,
        sensitivity=record.sensitivity.value,
        formed_at=formed,
        age=claims.remembered_for(formed, now),
    )


def _link(scope_id: str, record: MemoryRecord) -> dto.LineageLink:
    return dto.LineageLink(
        ref=memory_ref(scope_id, record.id),
        memory_id=record.id,
        summary=record.summary,
        status=record.status.value,
        formed_at=okf.formed_at(record),
    )
