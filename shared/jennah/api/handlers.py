"""Use-case handlers: an authorized request in, one service call, a wire response out.

`jennah.api.routes` has matched the route, authenticated the caller, checked
the route's permission (and, on a route naming a scope, opened the scope
through `Access.open_scope`) and parsed the request before a handler runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel

from jennah.api import dto
from jennah.api.context import Services
from jennah.domain import okf
from jennah.domain.access import ApiKey, Caller, CallerKind, RoleBinding, ScopeKind
from jennah.domain.models import (
    Direction,
    FilterOperator,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MetadataFilter,
    ScopeRecord,
)
from jennah.domain.retrieval import RetrievalMode
from jennah.errors import InvalidArgument
from jennah.services import admin, commands
from jennah.services import commit as commit_service
from jennah.services import evidence as evidence_service
from jennah.services import inspect as inspect_service
from jennah.services import query as query_service
from jennah.services.access import OpenedScope
from jennah.services.paging import Paging


class Headers(Protocol):
    """A request's headers, looked up case-insensitively by name."""

    def get(self, key: str, /) -> str | None: ...


@dataclass
class Reply:
    """A successful answer: a response model (or a ready JSON object) and extra headers;
    no body with a status such as 304 Not Modified; or, with `content`, those bytes as a
    body of `media_type` (a file download)."""

    body: BaseModel | dict[str, object] | None
    headers: dict[str, str] = field(default_factory=dict)
    status: int = 200
    content: bytes | None = None
    media_type: str = "application/json"


@dataclass(frozen=True)
class Call:
    """One authenticated and authorized request, as a handler sees it."""

    services: Services
    caller: Caller
    path: Mapping[str, str]
    request: Any  # the parsed body or query parameters; None when the route takes neither
    opened: OpenedScope | None = None  # set on routes whose path names a scope
    params: Any = None  # the parsed query parameters, on a route that takes a body too
    headers: Headers = field(default_factory=dict[str, str])  # the request's

    @property
    def scope(self) -> OpenedScope:
        assert self.opened is not None, "this route does not name a scope"
        return self.opened


# memory:commit


def commit(call: Call) -> Reply:
    services, request = call.services, call.request
    command = commands.CommitCommand.model_validate(
        {"scope": call.scope.ref, **request.model_dump()}
    )
    result = commit_service.commit(
        command,
        services.store,
        services.embedder,
        services.now,
        registration=call.scope.registration,
        passes=services.passes,
    )
    return Reply(
        dto.CommitResponse(
            commit_timestamp=result.commit_timestamp,
            chunks_written=result.chunks_written,
            nodes_written=result.nodes_written,
            edges_written=result.edges_written,
            chunk_supersessions=result.chunk_supersessions,
            edge_supersessions=result.edge_supersessions,
            chunk_ids=result.chunk_ids,
            edge_ids=result.edge_ids,
        )
    )


# memory:query


def query(call: Call) -> Reply:
    services, request = call.services, call.request
    command = commands.QueryCommand(
        scope=call.scope.ref,
        semantic=_semantic(request.semantic),
        graph=_graph(request.graph),
    )
    result = query_service.query(command, services.store, services.embedder, services.now)
    response = dto.QueryResponse()
    if result.semantic is not None:
        response.semantic = dto.SemanticResults(
            results=[chunk_out(s.record, score=s.score) for s in result.semantic]
        )
    if result.graph is not None:
        response.graph = dto.GraphResults(
            nodes=[node_out(r.node, depth=r.depth) for r in result.graph.nodes],
            edges=[edge_out(e) for e in result.graph.edges],
        )
    timing = f"embed;dur={result.embedding_ms:.2f}, search;dur={result.search_ms:.2f}"
    return Reply(response, headers={"Server-Timing": timing})


def _semantic(section: dto.SemanticQuery | None) -> commands.SemanticQuery | None:
    if section is None:
        return None
    return commands.SemanticQuery(
        query_text=section.query_text,
        top_k=section.top_k,
        filters=_filters(section.filters, "semantic.filters"),
        as_of_valid=section.as_of_valid,
        mode=RetrievalMode(section.mode),
    )


def _graph(section: dto.GraphQuery | None) -> commands.GraphQuery | None:
    if section is None:
        return None
    traversal = section.traversal
    return commands.GraphQuery(
        start_filters=_filters(
            section.start.filters if section.start else [], "graph.start.filters"
        ),
        traversal=None
        if traversal is None
        else commands.Traversal(
            relations=traversal.relations,
            direction=Direction(traversal.direction),
            depth=traversal.depth,
        ),
        limit=section.limit,
        as_of_valid=section.as_of_valid,
    )


def _filters(filters: Sequence[dto.Filter], field: str) -> list[MetadataFilter]:
    return [_filter(f, f"{field}[{i}]") for i, f in enumerate(filters)]


def _filter(flt: dto.Filter, field: str) -> MetadataFilter:
    operator = FilterOperator(flt.operator)
    if flt.value is not None and flt.values is not None:
        raise InvalidArgument(
            f"{field} gives both value and values; give value, or values for OPERATOR_IN",
            field=f"{field}.values",
        )
    values = [flt.value] if flt.value is not None else list(flt.values or [])
    if operator is not FilterOperator.IN and len(values) > 1:
        raise InvalidArgument(
            f"{field} has {len(values)} values, but {operator.value} takes one; "
            "use OPERATOR_IN to match any of several",
            field=f"{field}.values",
        )
    return MetadataFilter(key=flt.key, operator=operator, values=values)


# memory:inspect


def inspect(call: Call) -> Reply:
    services, params = call.services, call.request
    command = inspect_service.InspectCommand(
        scope=call.scope.ref,
        graph=params.graph,
        as_of_valid=params.as_of_valid,
        all_history=params.all_history,
        page_size=params.page_size,
        page_token=params.page_token,
    )
    page = inspect_service.inspect(command, services.store, services.now)
    return Reply(
        dto.InspectResponse(
            chunks=[chunk_out(c) for c in page.chunks],
            nodes=None if page.nodes is None else [node_out(n) for n in page.nodes],
            edges=None if page.edges is None else [edge_out(e) for e in page.edges],
            as_of_valid=page.as_of,
            next_page_token=page.next_page_token,
        )
    )


# a claim's evidence


def list_evidence(call: Call) -> Reply:
    services = call.services
    lines = evidence_service.list_evidence(services.store, call.scope.ref, call.path["memoryId"])
    return Reply(
        dto.ListEvidenceResponse(
            evidence=[
                dto.EvidenceLine(ref=e.ref, quote=e.quote, recorded_at=e.recorded_at) for e in lines
            ]
        )
    )


# administration: the caller, API keys, role bindings, users


def get_caller(call: Call) -> Reply:
    services = call.services
    view = admin.describe_caller(services.identity, call.caller)
    grants = view.usable
    return Reply(
        dto.CallerResponse(
            enterprise=call.caller.enterprise_id,
            principal=call.caller.principal,
            kind="API_KEY" if call.caller.kind is CallerKind.API_KEY else "USER",
            roles=[r.value for r in view.roles],
            permissions=sorted(str(p) for p in grants.permissions),
            agent_selectors=list(grants.agent_selectors),
            subject_selectors=list(grants.subject_selectors),
        )
    )


def create_api_key(call: Call) -> Reply:
    request: dto.CreateApiKeyRequest = call.request
    spec = admin.KeySpec.model_validate(request.model_dump())
    services = call.services
    created = admin.create_api_key(services.identity, call.caller, spec, services.now())
    resource = key_out(created.view).model_copy(update={"key_string": created.key_string})
    return Reply(resource, headers={"Cache-Control": "no-store"})


def list_api_keys(call: Call) -> Reply:
    services = call.services
    page = admin.list_api_keys(services.identity, call.caller, services.now(), paging(call))
    return Reply(
        dto.ListApiKeysResponse(
            api_keys=[key_out(v) for v in page.items], next_page_token=page.next_page_token
        )
    )


def revoke_api_key(call: Call) -> Reply:
    services = call.services
    view = admin.revoke_api_key(services.identity, call.caller, call.path["keyId"], services.now())
    return Reply(key_out(view))


def grant_role(call: Call) -> Reply:
    spec = admin.GrantSpec.model_validate(call.request.model_dump())
    services = call.services
    binding = admin.grant_role(services.identity, call.caller, spec, services.now())
    return Reply(binding_out(binding))


def revoke_role(call: Call) -> Reply:
    request: dto.RevokeRoleRequest = call.request
    admin.revoke_role(call.services.identity, call.caller, request.principal, request.role)
    return Reply(dto.Empty())


def list_role_bindings(call: Call) -> Reply:
    params: dto.ListRoleBindingsParams = call.request
    page = admin.list_role_bindings(
        call.services.identity, call.caller, params.principal, paging(call)
    )
    return Reply(
        dto.ListRoleBindingsResponse(
            role_bindings=[binding_out(b) for b in page.items],
            next_page_token=page.next_page_token,
        )
    )


def create_user(call: Call) -> Reply:
    request: dto.CreateUserRequest = call.request
    services = call.services
    user, token = admin.create_user(
        services.identity, call.caller, request.principal, services.now()
    )
    resource = dto.UserResource(principal=user.principal, create_time=user.created_at, token=token)
    return Reply(resource, headers={"Cache-Control": "no-store"})


# scopes


def list_scopes(call: Call) -> Reply:
    params: dto.ListScopesParams = call.request
    kind = None if params.kind is None else _kind(params.kind)
    services = call.services
    page = admin.list_scopes(services.access, services.store, call.caller, kind, paging(call))
    return Reply(
        dto.ListScopesResponse(
            scopes=[scope_out(r, "scopes") for r in page.items],
            next_page_token=page.next_page_token,
        )
    )


def list_agents(call: Call) -> Reply:
    services = call.services
    page = admin.list_scopes(
        services.access, services.store, call.caller, ScopeKind.AGENT, paging(call)
    )
    return Reply(
        dto.ListAgentsResponse(
            agents=[scope_out(r, "agents") for r in page.items],
            next_page_token=page.next_page_token,
        )
    )


def paging(call: Call) -> Paging:
    """The page a list request asks for (its pageSize and pageToken parameters)."""
    params: dto.PageParams = call.request
    return Paging(size=params.page_size, token=params.page_token)


def create_scope(call: Call) -> Reply:
    request: dto.CreateScopeRequest = call.request
    services = call.services
    record = admin.create_scope(
        services.access,
        services.store,
        call.caller,
        request.scope_id,
        _kind(request.kind),
        request.time_zone or "UTC",
    )
    return Reply(scope_out(record, "scopes"))


def update_scope(call: Call) -> Reply:
    """PATCH /v1/scopes/{scopeId} (AIP-134): the fields the updateMask names (a named
    field the body leaves out is reset to its default), or, without a mask, every field
    the body gives; nothing to change answers the scope as it is."""
    request: dto.UpdateScopeRequest = call.request
    params: dto.UpdateScopeParams = call.params
    services = call.services
    fields = _update_mask(params.update_mask, request)
    if "timeZone" in fields:
        record = admin.set_time_zone(services.store, call.scope, request.time_zone or "UTC")
    else:
        record = admin.get_scope(services.store, call.scope)
    return Reply(scope_out(record, "scopes"))


def _update_mask(mask: str | None, request: dto.UpdateScopeRequest) -> set[str]:
    """The wire names of the fields to update; InvalidArgument naming updateMask when it
    names a field that is not updatable."""
    if mask is None:
        return {"timeZone"} if request.time_zone is not None else set()
    fields: set[str] = set()
    for path in mask.split(","):
        name = "timeZone" if path == "time_zone" else path
        if name == "*":
            fields.update(dto.UPDATABLE_SCOPE_FIELDS)
        elif name in dto.UPDATABLE_SCOPE_FIELDS:
            fields.add(name)
        else:
            raise InvalidArgument(
                f"updateMask names {path[:80]!r}, which is not an updatable field "
                f"of a scope; updatable: {', '.join(dto.UPDATABLE_SCOPE_FIELDS)} (or *)",
                field="updateMask",
            )
    return fields


def destroy_scope(call: Call) -> Reply:
    services = call.services
    erased = admin.destroy_scope(
        services.store, services.vocabularies, call.scope, services.operations
    )
    return Reply(dto.DestroyScopeResponse(scope_id=call.scope.ref.scope_id, rows_erased=erased))


def _kind(name: str) -> ScopeKind:
    return ScopeKind.AGENT if name == "AGENT" else ScopeKind.SUBJECT


# domain -> wire (administration)


def key_out(view: admin.KeyView) -> dto.ApiKeyResource:
    key: ApiKey = view.key
    return dto.ApiKeyResource(
        name=f"apiKeys/{key.key_id}",
        key_id=key.key_id,
        display_name=key.display_name,
        roles=[b.role.value for b in view.bindings],
        agent_selectors=_union(b.agent_selectors for b in view.bindings),
        subject_selectors=_union(b.subject_selectors for b in view.bindings),
        created_by=key.created_by,
        create_time=key.created_at,
        expire_time=key.expire_time,
        revoke_time=key.revoked_at,
        state=view.state,
    )


def _union(lists: Any) -> list[str]:
    return list(dict.fromkeys(item for items in lists for item in items))


def binding_out(binding: RoleBinding) -> dto.RoleBindingResource:
    return dto.RoleBindingResource(
        principal=binding.principal,
        role=binding.role.value,
        agent_selectors=binding.agent_selectors,
        subject_selectors=binding.subject_selectors,
    )


def scope_out(record: ScopeRecord, collection: str) -> dto.ScopeResource:
    return dto.ScopeResource(
        name=f"{collection}/{record.scope.scope_id}",
        scope_id=record.scope.scope_id,
        kind="AGENT" if record.kind == ScopeKind.AGENT.value else "SUBJECT",
        create_time=record.created_at,
        created_by=record.created_by,
        time_zone=record.time_zone,
    )


# domain -> wire (memory)


def chunk_out(record: MemoryRecord, score: float | None = None) -> dto.Chunk:
    return dto.Chunk(
        id=record.id,
        text=record.text,
        metadata=record.metadata,
        valid_at=record.valid_at,
        invalid_at=record.invalid_at,
        created_at=record.created_at,
        score=score,
        supersedes=record.supersedes,
        superseded_by=record.superseded_by,
        type=record.type.value,
        about=record.about,
        summary=record.summary,
        when_to_use=record.when_to_use,
        applies_to=record.applies_to,
        strength=record.strength.value,
        pin=record.pin,
        authority=record.authority.value,
        confidence=record.confidence,
        durability=record.durability.value,
        formed_at=okf.formed_at(record),
        last_reinforced_at=record.last_reinforced_at,
        reinforcement_count=record.reinforcement_count,
        valid_until=record.valid_until,
        status=record.status.value,
        related=record.related,
        sensitivity=record.sensitivity.value,
        revision=record.revision,
        needs_enrichment=record.needs_enrichment,
        extensions={
            key: value for key, value in record.extensions.items() if key != okf.FORMED_AT_EXTENSION
        },
    )


def node_out(node: GraphNode, depth: int | None = None) -> dto.Node:
    return dto.Node(
        node_id=node.node_id,
        label=node.label,
        node_type=node.node_type or None,
        properties=node.properties,
        depth=depth,
    )


def edge_out(edge: GraphEdge) -> dto.Edge:
    return dto.Edge(
        edge_id=edge.edge_id,
        source=edge.source,
        relation=edge.relation,
        target=edge.target,
        properties=edge.properties,
        valid_at=edge.valid_at,
        invalid_at=edge.invalid_at,
        supersedes=edge.supersedes,
        superseded_by=edge.superseded_by,
    )
