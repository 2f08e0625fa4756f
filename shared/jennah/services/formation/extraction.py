"""Extraction: one model call over the numbered, clocked conversation.

The data block carries the clock (so relative dates become absolute), every
turn with its index and role, the structures detected in the turns, and the
resolved vocabulary. At most MAX_CANDIDATES candidates are kept, in the
model's order; the rest are dropped and counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from jennah.domain.formation import (
    MAX_CANDIDATES,
    ROLE_LABELS,
    ExtractedCandidate,
    Structure,
    Turn,
)
from jennah.ports.model import LanguageModel
from jennah.ports.prompts import (
    EXTRACT_INSTRUCTIONS,
    EXTRACTION_SCHEMA,
    ExtractionAnswer,
    build_prompt,
)
from jennah.services.formation.model_calls import CallBounds, FormationUsage, call_model


def extract(
    model: LanguageModel,
    data: dict[str, Any],
    bounds: CallBounds,
    usage: FormationUsage,
) -> tuple[list[ExtractedCandidate], int]:
    """The kept candidates and how many were dropped over the cap."""
    prompt = build_prompt(EXTRACT_INSTRUCTIONS, data)
    answer = call_model(
        model, "extraction", prompt, EXTRACTION_SCHEMA, ExtractionAnswer, bounds, usage
    )
    kept = answer.candidates[:MAX_CANDIDATES]
    return kept, len(answer.candidates) - len(kept)


def extraction_data(
    turns: Sequence[Turn],
    clock: datetime,
    structures: Sequence[list[Structure]],
    vocabulary: dict[str, Any] | None,
) -> dict[str, Any]:
    """The extract prompt's data object."""
    return {
        "task": "extract",
        "clock": clock.isoformat(),
        "turns": [
            {"index": i, "role": ROLE_LABELS[turn.role], "content": turn.content}
            for i, turn in enumerate(turns)
        ],
        "structures": [
            {"turnIndex": i, "kind": s.kind.value, "text": s.text}
            for i, found in enumerate(structures)
            for s in found
        ],
        "vocabulary": {
            "entityClasses": list((vocabulary or {}).get("entityClasses") or []),
            "relationTypes": list((vocabulary or {}).get("relationTypes") or []),
        },
    }


def entity_classes(vocabulary: dict[str, Any] | None) -> frozenset[str]:
    """The class names the resolved vocabulary declares (none: classification is off)."""
    classes = (vocabulary or {}).get("entityClasses") or []
    return frozenset(
        entry["name"]
        for entry in classes
        if isinstance(entry, dict) and isinstance(entry.get("name"), str)
    )
