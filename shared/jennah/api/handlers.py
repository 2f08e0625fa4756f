"""Use-case handlers: a parsed wire request in, one service call, a wire response out."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from jennah.api import dto
from jennah.bootstrap import Container
from jennah.domain.models import (
    Direction,
    FilterOperator,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MetadataFilter,
    ScopeRef,
)
from jennah.errors import InvalidArgument
from jennah.services import commands
from jennah.services import commit as commit_service
from jennah.services import inspect as inspect_service
from jennah.services import query as query_service


@dataclass
class Reply:
    """A successful answer: a response model (or a ready JSON object) and extra headers."""

    body: BaseModel | dict[str, object]
    headers: dict[str, str] = field(default_factory=dict)


# memory:commit


def commit(scope: ScopeRef, request: dto.CommitRequest, container: Container) -> Reply:
    command = commands.CommitCommand.model_validate({"scope": scope, **request.model_dump()})
    result = commit_service.commit(command, container.store, container.embedder, container.now)
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


def query(scope: ScopeRef, request: dto.QueryRequest, container: Container) -> Reply:
    command = commands.QueryCommand(
        scope=scope,
        semantic=_semantic(request.semantic),
        graph=_graph(request.graph),
    )
    result = query_service.query(command, container.store, container.embedder, container.now)
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


def _filters(filters: list[dto.Filter], field: str) -> list[MetadataFilter]:
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


def inspect(scope: ScopeRef, params: dto.InspectParams, container: Container) -> Reply:
    command = inspect_service.InspectCommand(
        scope=scope,
        graph=params.graph,
        as_of_valid=params.as_of_valid,
        all_history=params.all_history,
        page_size=params.page_size,
        page_token=params.page_token,
    )
    page = inspect_service.inspect(command, container.store, container.now)
    return Reply(
        dto.InspectResponse(
            chunks=[chunk_out(c) for c in page.chunks],
            nodes=None if page.nodes is None else [node_out(n) for n in page.nodes],
            edges=None if page.edges is None else [edge_out(e) for e in page.edges],
            as_of_valid=page.as_of,
            next_page_token=page.next_page_token,
        )
    )


# domain -> wire


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
