"""The vocabulary store port: one declaration per enterprise and per scope.

Control documents: Firestore in production, the SQLite file in the embedded
default; one contract suite runs against both. `scope_id` None is the
enterprise level; a scope id names that scope's level. Each level holds at most
one declaration, replaced whole by `put` (never merged). The store keeps what
it is given: bounds are checked before (`jennah.domain.vocabulary.validated`),
so a rejected declaration never reaches it and the previous one stays intact.
Every method is confined to one enterprise.
"""

from __future__ import annotations

from typing import Protocol

from jennah.domain.vocabulary import Declaration, Vocabulary


class VocabularyStore(Protocol):
    def get(self, enterprise_id: str, scope_id: str | None) -> Declaration | None:
        """The level's declaration; None when it is absent (not the same as empty)."""
        ...

    def put(self, enterprise_id: str, scope_id: str | None, vocabulary: Vocabulary) -> Declaration:
        """Replace the level's whole declaration in one atomic write; what is now stored."""
        ...

    def delete(self, enterprise_id: str, scope_id: str | None) -> bool:
        """Remove the level's declaration, restoring absence; False when there was none."""
        ...

    def delete_scope(self, enterprise_id: str, scope_id: str) -> None:
        """Erase everything the store holds for a destroyed scope; idempotent.

        Never touches the enterprise level or another scope.
        """
        ...
