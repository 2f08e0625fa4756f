"""Candidates that touch the same memory, handled one by one; clashes are rejected (the
formation never fails for it). In candidate order:

1. Two revisions of one memory: both stay REVISED with the same matchedId; the
   memory is retired once and both replacements are stored from the same
   instant (planning writes one supersession per retired memory).
2. A NEW candidate identical to a revision's replacement: both keep their
   decisions; planning stores the content once (as the replacement).
3. A NEW or KNOWN candidate for a memory another candidate retires: REJECTED,
   one formation cannot both keep and retire the same memory.
4. A revision whose replacement another revision already stores, or whose
   replacement is itself a memory another candidate retires: REJECTED; it
   retires nothing, so the memory it named stays current unless another
   revision retires it.
"""

from __future__ import annotations

from collections.abc import Sequence

from jennah.domain.formation import Decision
from jennah.services.formation.candidates import Candidate, ContentKey


def reject_clashes(candidates: Sequence[Candidate]) -> None:
    """Apply rules 3 and 4 in place (rules 1 and 2 keep every decision)."""
    revisions = [c for c in candidates if c.decision is Decision.REVISED]
    _replacement_is_retired(revisions)
    _replacement_already_stored(revisions)
    _kept_and_retired(candidates)


def retirers(candidates: Sequence[Candidate]) -> dict[str, Candidate]:
    """Each memory the formation retires, with the first candidate revising it."""
    retired: dict[str, Candidate] = {}
    for candidate in candidates:
        if candidate.decision is Decision.REVISED and candidate.matched_id is not None:
            retired.setdefault(candidate.matched_id, candidate)
    return retired


def _retired_content(candidates: Sequence[Candidate]) -> dict[ContentKey, Candidate]:
    """The content of each memory being retired, with the first candidate revising it."""
    content: dict[ContentKey, Candidate] = {}
    for candidate in retirers(candidates).values():
        assert candidate.matched is not None
        content.setdefault(candidate.matched.content_key, candidate)
    return content


def _replacement_is_retired(revisions: Sequence[Candidate]) -> None:
    retired = _retired_content(revisions)
    for candidate in revisions:
        other = retired.get(candidate.content_key)
        if other is not None and other is not candidate:
            candidate.reject(
                f"its replacement is {other.matched_id}, which candidate {other.index} retires; "
                f"it does not retire {candidate.matched_id}"
            )


def _replacement_already_stored(revisions: Sequence[Candidate]) -> None:
    stored: dict[ContentKey, Candidate] = {}
    for candidate in revisions:
        if candidate.decision is not Decision.REVISED:
            continue
        first = stored.setdefault(candidate.content_key, candidate)
        if first is not candidate:
            candidate.reject(
                f"its replacement is already stored by candidate {first.index}, which revises "
                f"{first.matched_id}; it does not retire {candidate.matched_id}"
            )


def _kept_and_retired(candidates: Sequence[Candidate]) -> None:
    retired = retirers(candidates)
    retired_content = _retired_content(candidates)
    for candidate in candidates:
        if candidate.decision is Decision.KNOWN and candidate.matched_id in retired:
            other = retired[candidate.matched_id]
        elif candidate.decision is Decision.NEW and candidate.content_key in retired_content:
            other = retired_content[candidate.content_key]
        else:
            continue
        candidate.reject(
            f"candidate {other.index} retires {other.matched_id}: one formation cannot both "
            "keep and retire the same memory"
        )
