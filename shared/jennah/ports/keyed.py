"""Keyed memory's ports: the store of entries (and their links and term index), and the
optional judge recall may ask about its shortlist (domain.keyed says how entries are kept).

Both store adapters implement KeyedMemoryStore (SQLite and Spanner, in their own `keyed`
modules); the contract suite runs it on both. Every method is confined to one ScopeRef.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from jennah.domain.keyed import KeyedMemory, Match
from jennah.domain.models import ScopeRecord, ScopeRef


class KeyedMemoryStore(Protocol):
    def put_keyed(
        self,
        scope: ScopeRef,
        entry: KeyedMemory,
        terms: Sequence[str],
        expected_version: int,
        registration: ScopeRecord | None,
    ) -> KeyedMemory:
        """Create (`expected_version` 0) or update the entry `entry.key` in ONE transaction,
        checking the stored version inside it (domain.keyed.check_write: AlreadyExists or
        Aborted KEYED_MEMORY_VERSION_MISMATCH, nothing written). Writes `entry.content`,
        `entry.token_count` and `terms` (the entry's term index, replaced whole); answers
        the stored entry: version expected + 1, create and update time (the commit time;
        create time kept on update) and its links. `registration` registers the scope in
        the same transaction when it is not registered yet."""
        ...

    def get_keyed(self, scope: ScopeRef, key: str) -> KeyedMemory | None:
        """The entry with its links, or None."""
        ...

    def list_keyed(self, scope: ScopeRef, offset: int, limit: int) -> list[KeyedMemory]:
        """A page of the scope's entries, most recently updated first, then by key."""
        ...

    def forget_keyed(self, scope: ScopeRef, key: str) -> bool:
        """Delete the entry, its terms and every link to or from it, in one transaction;
        False when there was no such entry."""
        ...

    def link_keyed(self, scope: ScopeRef, key: str, target: str) -> KeyedMemory:
        """Link two entries (symmetric; linking a linked pair again changes nothing), in one
        transaction: NotFound naming `key` or `target` when either is absent,
        FailedPrecondition KEYED_MEMORY_LINK_LIMIT when either already has MAX_LINKS
        links. Answers the entry `key` with its links."""
        ...

    def unlink_keyed(self, scope: ScopeRef, key: str, target: str) -> KeyedMemory:
        """Remove the link between two entries (none: nothing changes); NotFound when
        `key` is absent. Answers the entry `key` with its links."""
        ...

    def count_terms(self, scope: ScopeRef, words: Sequence[str], cap: int) -> dict[str, int]:
        """For each word, how many entries hold it, counted up to `cap` + 1 (a count above
        `cap` means "more than cap")."""
        ...

    def match_keyed(
        self, scope: ScopeRef, words: Sequence[str], offset: int, limit: int
    ) -> list[Match]:
        """Entries whose term index holds at least one of `words`, scored by how many of
        them it holds; best first, then most recently updated, then key (a page).
        Entries are answered without their links."""
        ...

    def linked_keyed(self, scope: ScopeRef, keys: Sequence[str]) -> dict[str, list[KeyedMemory]]:
        """For each of `keys`, the entries directly linked with it (either direction),
        most recently updated first, then by key; a key without links maps to []."""
        ...


class RecallJudge(Protocol):
    """One model call that judges a recall shortlist for usefulness to the request."""

    def judge(self, request: str, shortlist: Sequence[KeyedMemory]) -> list[str]:
        """The keys of the useful entries, most useful first; a key left out is dropped.
        Keys that are not in the shortlist are ignored by the caller."""
        ...
