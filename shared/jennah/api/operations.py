"""GET /v1/operations: the memory:form operations the caller may read, newest first.

`jennah.api.routes` has checked agent.memory:form; the service leaves out the
operations of agent workspaces the caller does not reach. One operation is read
by `jennah.api.formation.get_operation`, and is printed the same way here.
"""

from __future__ import annotations

from jennah.api import dto
from jennah.api.formation import operation_out
from jennah.api.handlers import Call, Reply, paging
from jennah.services import operations


def list_operations(call: Call) -> Reply:
    services = call.services
    page = operations.list_operations(
        services.access, services.operations, call.caller, paging(call)
    )
    return Reply(
        dto.ListOperationsResponse(
            operations=[operation_out(operation) for operation in page.items],
            next_page_token=page.next_page_token,
        )
    )
