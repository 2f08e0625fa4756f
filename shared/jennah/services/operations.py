"""Listing memory:form operations: the caller's enterprise's, in the agent workspaces
it reaches, newest first (GET /v1/operations; one is read by
`GET /v1/operations/{operationId}`, in `jennah.api.formation`).

The route needs agent.memory:form, as reading one operation does; an operation in
a workspace the caller does not reach is left out, as reading it answers NOT_FOUND.
"""

from __future__ import annotations

from datetime import datetime

from jennah.domain.access import Caller, ScopeKind, reaches
from jennah.domain.operations import FormationOperation
from jennah.ports.operations import OperationStore
from jennah.services.access import Access
from jennah.services.paging import Key, Page, Paging, fill, not_issued, page_request


def list_operations(
    access: Access, operations: OperationStore, caller: Caller, paging: Paging
) -> Page[FormationOperation]:
    """A page of the operations the caller may read, newest first."""
    grants = access.grants(caller)
    bound_to = {"enterprise": caller.enterprise_id, "principal": caller.principal}
    request = page_request("operations", bound_to, paging, key_length=2)

    def fetch(after: Key | None, limit: int) -> list[FormationOperation]:
        before = None if after is None else (_instant(after[0]), after[1])
        return operations.list_newest(caller.enterprise_id, limit, before)

    return fill(
        request,
        fetch,
        key=lambda operation: (operation.create_time.isoformat(), operation.operation_id),
        keep=lambda operation: reaches(grants, ScopeKind.AGENT, operation.scope_id),
    )


def _instant(text: str) -> datetime:
    try:
        instant = datetime.fromisoformat(text)
    except ValueError:
        raise not_issued() from None
    if instant.tzinfo is None:
        raise not_issued()
    return instant
