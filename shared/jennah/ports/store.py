"""The memory store port: the system of record for memory, graph and logs.

Two adapters implement it, SQLite (embedded default) and Cloud Spanner
(production); one contract suite (`tests/contract`) runs against both. Every
method is confined to one `ScopeRef`: no method reads or writes another
enterprise's or scope's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from jennah.domain.card import CardKey, ClaimFilter
from jennah.domain.claim_state import ClaimState
from jennah.domain.models import (
    BriefVariant,
    ChangeLogEntry,
    CommitPlan,
    CommitResult,
    Direction,
    Evidence,
    ExecutionLogStep,
    FormationKeyRecord,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MetadataFilter,
    ScopeRecord,
    ScopeRef,
    ScoredRecord,
    Status,
    StoredBrief,
)
from jennah.domain.suppression import Suppression
from jennah.ports.keyed import KeyedMemoryStore


class MemoryStore(KeyedMemoryStore, Protocol):
    """The memory store; keyed memory's half is `jennah.ports.keyed.KeyedMemoryStore`."""

    def apply(self, plan: CommitPlan) -> CommitResult:
        """Write the whole plan in ONE transaction, or nothing.

        Raises NotFound when a supersession names a chunk or edge that does not
        exist, FailedPrecondition when it names one already closed differently.
        `commit_timestamp` is the transaction's commit time; it becomes the
        `created_at` of rows this commit inserted.
        """
        ...

    def search_chunks(
        self,
        scope: ScopeRef,
        vector: Sequence[float],
        top_k: int,
        filters: Sequence[MetadataFilter],
        as_of: datetime,
    ) -> list[ScoredRecord]:
        """Nearest chunks by cosine similarity among those valid at `as_of` that
        match every filter and whose status is not hidden (domain HIDDEN_STATUSES);
        best first, ties broken by id ascending. A search's records come without their
        embedding (None): no reader of a search needs it (`get_chunks` has it)."""
        ...

    def search_words(
        self,
        scope: ScopeRef,
        words: Sequence[str],
        limit: int,
        filters: Sequence[MetadataFilter],
        as_of: datetime,
        *,
        fuzzy: bool = False,
    ) -> list[ScoredRecord]:
        """At most `limit` chunks valid at `as_of`, not hidden (HIDDEN_STATUSES), that match
        every filter and whose text
        holds at least one of `words` (lowercase letters and digits, from
        `retrieval.query_words`), best first by the store's word relevance (more of the
        words, rarer words, shorter texts), ties broken by id; the score is that relevance.

        SQLite matches Porter-stemmed words (FTS5), Spanner its full-text tokens
        (SEARCH on TOKENIZE_FULLTEXT). With `fuzzy`, a text matches when it shares
        letter trigrams with the words (SQLite's trigram FTS5 index, Spanner's
        SEARCH_NGRAMS), so a word with one typo still finds its memory; every word given
        is searched by its letters (the caller leaves out the `held_words`, no typos).
        The records come without their embedding, as `search_chunks`'s.
        """
        ...

    def held_words(
        self,
        scope: ScopeRef,
        words: Sequence[str],
        filters: Sequence[MetadataFilter],
        as_of: datetime,
    ) -> set[str]:
        """The `words` some chunk valid at `as_of`, not hidden (HIDDEN_STATUSES) and
        matching every filter holds as the word search reads it (SQLite's Porter-stemmed
        words, Spanner's full-text tokens): a word a chunk the search may return holds as
        written is no typo. One probe per word that stops at its first match."""
        ...

    def list_claims(
        self,
        scope: ScopeRef,
        statuses: Sequence[Status] | None,
        after: str | None,
        limit: int,
    ) -> list[MemoryRecord]:
        """The scope's claims whose status is one of `statuses` (all when None), whatever
        their validity, ordered by id: only ids after `after` when given, at most `limit`.
        Embeddings are left out (None): the lifecycle pass and the brief read many claims."""
        ...

    def list_claims_page(
        self,
        scope: ScopeRef,
        claim_filter: ClaimFilter,
        after: CardKey | None,
        limit: int,
    ) -> list[MemoryRecord]:
        """The memory card's claims (domain.card): those matching `claim_filter` (a status
        among its statuses, its type, sensitivity and applies_to node when given), whatever
        their validity, newest first (created_at descending, then id ascending), only those
        after the card key `after` (created_at, id) when given, at most `limit`. Read
        through an index on (scope, created_at): a page costs about `limit` rows however
        large the scope. Embeddings are left out (None)."""

    def list_claim_states(
        self, scope: ScopeRef, statuses: Sequence[Status] | None
    ) -> list[ClaimState]:
        """Every claim of the scope whose status is one of `statuses` (all when None),
        whatever its validity, as a ClaimState (only the fields the lifecycle pass and the
        brief read), ordered by id, in one read. The states are immutable: a store may
        answer the same objects again while the claims do not change."""
        ...

    def list_evidence(self, scope: ScopeRef, memory_ids: Sequence[str]) -> list[Evidence]:
        """The evidence lines of the named claims, ordered by memory id, recorded_at, ref."""
        ...

    def list_suppressions(
        self, scope: ScopeRef, after: str | None, limit: int
    ) -> list[Suppression]:
        """The scope's suppression rules ordered by id, embeddings included: only ids
        after `after` when given, at most `limit` (a page; formation reads them all)."""
        ...

    def get_brief(self, scope: ScopeRef, variant: BriefVariant) -> StoredBrief | None:
        """The brief last compiled for the scope in that variant, or None."""
        ...

    def list_change_log(self, scope: ScopeRef, limit: int, offset: int = 0) -> list[ChangeLogEntry]:
        """The scope's change-log lines, newest first (recorded_at descending, then memory
        id, change), a page of at most `limit` after skipping `offset`."""
        ...

    def set_time_zone(self, scope: ScopeRef, time_zone: str) -> ScopeRecord:
        """Set a registered scope's IANA time zone (validated by the caller) and answer
        the registration; NotFound when the scope is not registered."""
        ...

    def walk_scopes(self, after: ScopeRef | None, limit: int) -> list[ScopeRecord]:
        """Every registered scope of EVERY enterprise ordered by (enterprise id, scope
        id), only those after `after` when given, at most `limit`: the nightly lifecycle
        pass's cursor. Only the private lifecycle function calls it."""
        ...

    def get_chunks(self, scope: ScopeRef, ids: Sequence[str]) -> list[MemoryRecord]:
        """The named chunks that exist (any validity), in id order."""
        ...

    def list_chunks(
        self, scope: ScopeRef, as_of: datetime | None, limit: int, offset: int
    ) -> list[MemoryRecord]:
        """Chunks valid at `as_of` and not hidden (HIDDEN_STATUSES) (every row, whatever
        its status, when `as_of` is None), ordered by id."""
        ...

    def find_nodes(
        self, scope: ScopeRef, filters: Sequence[MetadataFilter], limit: int
    ) -> list[GraphNode]:
        """Nodes matching every filter on NodeId, Label or NodeType, ordered by node id."""
        ...

    def get_nodes(self, scope: ScopeRef, node_ids: Sequence[str]) -> list[GraphNode]: ...

    def edges_touching(
        self,
        scope: ScopeRef,
        node_ids: Sequence[str],
        relations: Sequence[str],
        direction: Direction,
        as_of: datetime | None,
    ) -> list[GraphEdge]:
        """Edges leaving (OUTBOUND), entering (INBOUND) or touching (ANY) the
        nodes, of the given relations (all when empty), valid at `as_of`
        (every edge when None), ordered by edge id."""
        ...

    def get_edges(self, scope: ScopeRef, edge_ids: Sequence[str]) -> list[GraphEdge]: ...

    def get_step(self, scope: ScopeRef, step_id: str) -> ExecutionLogStep | None: ...

    def get_scope(self, scope: ScopeRef) -> ScopeRecord | None:
        """The scope's registration, or None when it was never written or was destroyed."""
        ...

    def list_scopes(
        self, enterprise_id: str, after: str | None = None, limit: int | None = None
    ) -> list[ScopeRecord]:
        """The enterprise's registered scopes ordered by scope id: only those whose id
        is after `after` when given, at most `limit` when given (a page)."""
        ...

    def destroy_scope(self, scope: ScopeRef) -> int:
        """Erase the scope's registration and EVERY row of the scope, in one transaction:
        memory records, evidence, links, nodes, edges, execution-log steps, formation
        keys, briefs, the change log and suppression rules. Nothing of any other scope.
        Returns the number of rows erased."""
        ...

    def find_chunks_by_content(
        self, scope: ScopeRef, content_hashes: Sequence[str], as_of: datetime | None
    ) -> list[MemoryRecord]:
        """Chunks whose `content_hash` is one of `content_hashes` (identical wording),
        valid at `as_of` (every row when None), ordered by id."""
        ...

    def get_formation_key(self, scope: ScopeRef, formation_key: str) -> FormationKeyRecord | None:
        """The committed formation-key record (fingerprint, receipt JSON, and
        `committed_at`: the commit timestamp of the formation that wrote it), or None."""
        ...
