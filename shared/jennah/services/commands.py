"""Inputs to the use cases, independent of any wire format."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from jennah.domain.models import (
    Authority,
    Direction,
    Durability,
    MemoryType,
    MetadataFilter,
    ScopeRef,
    Sensitivity,
    Status,
    Strength,
)
from jennah.domain.retrieval import RetrievalMode


class ChunkInput(BaseModel):
    """A chunk to write: its words (`text`, the claim's body) and its claim fields; a
    field left None takes MemoryRecord's default."""

    text: str
    metadata: dict[str, str] = Field(default_factory=dict)
    valid_at: datetime | None = None
    type: MemoryType | None = None
    about: str | None = None
    summary: str | None = None
    when_to_use: str | None = None
    applies_to: list[str] | None = None
    strength: Strength | None = None
    pin: bool | None = None
    authority: Authority | None = None
    confidence: float | None = None
    durability: Durability | None = None
    valid_until: datetime | None = None
    status: Status | None = None
    sensitivity: Sensitivity | None = None
    related: list[str] | None = None
    needs_enrichment: bool | None = None
    extensions: dict[str, str] | None = None


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
