"""Inputs to the use cases, independent of any wire format."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from jennah.domain.models import Direction, MetadataFilter, ScopeRef
from jennah.domain.retrieval import RetrievalMode


class ChunkInput(BaseModel):
    text: str
    metadata: dict[str, str] = Field(default_factory=dict)
    valid_at: datetime | None = None


class NodeInput(BaseModel):
    node_id: str
    label: str = ""
    node_type: str | None = None
    properties: dict[str, str] = Field(default_factory=dict)


class EdgeInput(BaseModel):
    source: str
    relation: str
    target: str
    valid_at: datetime | None = None
    properties: dict[str, str] = Field(default_factory=dict)


class SupersessionInput(BaseModel):
    """Close `chunk_id` (or `edge_id`) and insert its replacement, in one commit."""

    chunk_id: str | None = None
    edge_id: str | None = None
    replacement_chunk: ChunkInput | None = None
    replacement_edge: EdgeInput | None = None


class CommitCommand(BaseModel):
    scope: ScopeRef
    chunks: list[ChunkInput] = Field(default_factory=list)
    nodes: list[NodeInput] = Field(default_factory=list)
    edges: list[EdgeInput] = Field(default_factory=list)
    supersessions: list[SupersessionInput] = Field(default_factory=list)


class SemanticQuery(BaseModel):
    query_text: str
    top_k: int = 10
    filters: list[MetadataFilter] = Field(default_factory=list)
    as_of_valid: datetime | None = None
    mode: RetrievalMode = RetrievalMode.HYBRID


class Traversal(BaseModel):
    relations: list[str] = Field(default_factory=list)
    direction: Direction = Direction.OUTBOUND
    depth: int = 1


class GraphQuery(BaseModel):
    start_filters: list[MetadataFilter] = Field(default_factory=list)
    traversal: Traversal | None = None
    limit: int = 100
    as_of_valid: datetime | None = None


class QueryCommand(BaseModel):
    scope: ScopeRef
    semantic: SemanticQuery | None = None
    graph: GraphQuery | None = None
