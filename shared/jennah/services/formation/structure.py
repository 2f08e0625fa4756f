"""Tables and fenced code blocks: which facts keep them verbatim, and which were summarized.

`preservesStructure` is true only for a fact whose text keeps, verbatim, a
structure detected in the turns it cites (every turn when its attribution is
unusable). A structure that no stored or known fact keeps verbatim is reported
per turn in `summarizedStructures`, whether or not any fact cited its turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from jennah.domain.formation import (
    Decision,
    Structure,
    SummarizedStructures,
    Turn,
    describe,
    detect_structures,
    preserves_structure,
)
from jennah.services.formation.candidates import Candidate


def detect(turns: Sequence[Turn]) -> list[list[Structure]]:
    """The structures of each turn, by turn index."""
    return [detect_structures(turn.content) for turn in turns]


def mark_preserved(candidates: Sequence[Candidate], structures: Sequence[list[Structure]]) -> None:
    """Set `preserves_structure` on the facts that keep a structure of their turns."""
    for candidate in candidates:
        if not candidate.is_fact:
            continue
        cited = candidate.source_turns
        indexes = cited if cited is not None else range(len(structures))
        own = [s for i in indexes for s in structures[i]]
        candidate.preserves_structure = preserves_structure(candidate.text, own)


def summarized(
    candidates: Sequence[Candidate], structures: Sequence[list[Structure]]
) -> list[SummarizedStructures]:
    """Per turn, the structures no kept fact (not rejected) holds verbatim."""
    kept = [c.text for c in candidates if c.is_fact and c.decision is not Decision.REJECTED]
    report: list[SummarizedStructures] = []
    for index, found in enumerate(structures):
        lost = [s for s in found if not any(preserves_structure(text, [s]) for text in kept)]
        if lost:
            report.append(
                SummarizedStructures(
                    turn_index=index, description=describe(lost), summarized_count=len(lost)
                )
            )
    return report
