"""Declaring, reading and removing a memory vocabulary, and resolving it for formation.

The level is the enterprise when `scope_id` is None, else that scope. Access:

- declaring and removing need agent.vocabulary:manage (management-class, so
  never an API key); reading needs agent.vocabulary:read;
- naming a scope also needs reach over it (checked first, in the namespace its
  kind selects; a scope not written yet counts as a subject scope), and a
  caller without reach is answered exactly as though the scope did not exist.
  A reachable scope that does not exist yet may be declared, read and removed
  at: a declaration does not register the scope, and reading it resolves the
  enterprise default. The enterprise level needs no reach.

Removing a level that declares nothing is NOT_FOUND naming the level (as a
Google API answers a DELETE of an absent resource). Nothing here touches the
memory a scope holds: a vocabulary steers formation and gates nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from jennah.domain.access import Caller, Permission
from jennah.domain.models import ScopeRef
from jennah.domain.vocabulary import Declaration, Vocabulary, resolve, validated
from jennah.errors import InvalidArgument, NotFound
from jennah.ports.vocabulary import VocabularyStore
from jennah.services.access import Access


@dataclass(frozen=True)
class VocabularyView:
    """What GET answers: `declaration` is what THIS level declares (None: absent);
    `resolved` is what formation uses here (None: classification is off)."""

    declaration: Declaration | None
    resolved: Vocabulary | None


def declare(
    caller: Caller,
    access: Access,
    store: VocabularyStore,
    scope_id: str | None,
    vocabulary: Vocabulary | None,
) -> VocabularyView:
    """Replace the level's declaration whole; the view of the level afterwards.

    `vocabulary` None (a PUT without `vocabulary`) is INVALID_ARGUMENT, never
    read as an empty declaration or a removal. A declaration breaking a bound is
    INVALID_ARGUMENT and nothing is written. Access is checked before the
    vocabulary, so a caller who may not declare learns nothing from its mistakes.
    """
    _authorize(caller, access, scope_id, Permission.VOCABULARY_MANAGE)
    if vocabulary is None:
        raise InvalidArgument(
            "vocabulary is required; to declare an empty vocabulary (classification off) "
            "send one with no entity classes, and to remove a declaration use DELETE",
            field="vocabulary",
        )
    declaration = store.put(caller.enterprise_id, scope_id, validated(vocabulary))
    if scope_id is None:
        return VocabularyView(declaration, resolve(declaration.vocabulary, None))
    return VocabularyView(declaration, resolve(None, declaration.vocabulary))


def get(
    caller: Caller, access: Access, store: VocabularyStore, scope_id: str | None
) -> VocabularyView:
    """What the level declares and what resolves for it."""
    _authorize(caller, access, scope_id, Permission.VOCABULARY_READ)
    declaration = store.get(caller.enterprise_id, scope_id)
    if scope_id is None:
        return VocabularyView(declaration, resolve(_vocabulary_of(declaration), None))
    return VocabularyView(declaration, _resolved(store, caller.enterprise_id, declaration))


def remove(caller: Caller, access: Access, store: VocabularyStore, scope_id: str | None) -> None:
    """Remove the level's declaration: a scope inherits the enterprise default again.

    NOT_FOUND naming the level when it declares nothing.
    """
    _authorize(caller, access, scope_id, Permission.VOCABULARY_MANAGE)
    if not store.delete(caller.enterprise_id, scope_id):
        level = "the enterprise level" if scope_id is None else f"scope {scope_id!r}"
        raise NotFound(
            f"no vocabulary is declared at {level}",
            metadata={} if scope_id is None else {"scopeId": scope_id},
        )


def resolve_for_formation(store: VocabularyStore, scope: ScopeRef) -> Vocabulary | None:
    """The vocabulary a formation starting now uses for `scope` (None: classification off).

    Resolve once, when the formation starts, and keep the result for the whole
    formation: a declaration made meanwhile applies to the next one.
    """
    declaration = store.get(scope.enterprise_id, scope.scope_id)
    return _resolved(store, scope.enterprise_id, declaration)


def _authorize(
    caller: Caller, access: Access, scope_id: str | None, permission: Permission
) -> None:
    if scope_id is None:
        access.require(caller, permission)
    else:  # reach first; `create`: a reachable scope need not exist yet (nothing registers it)
        access.open_scope(caller, scope_id, None, permission, create=True)


def _resolved(
    store: VocabularyStore, enterprise_id: str, scope_declaration: Declaration | None
) -> Vocabulary | None:
    """Resolution for a scope; reads the enterprise level only when the scope inherits."""
    if scope_declaration is not None:
        return resolve(None, scope_declaration.vocabulary)
    return resolve(_vocabulary_of(store.get(enterprise_id, None)), None)


def _vocabulary_of(declaration: Declaration | None) -> Vocabulary | None:
    return None if declaration is None else declaration.vocabulary
