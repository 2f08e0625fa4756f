"""The formation-quality runner's claim-field scores (bench/formation_quality_claims.py),
on rows and inspected memory written by hand: no server, no model."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from formation_quality_cases import Case  # noqa: E402
from formation_quality_claims import claim_report  # noqa: E402
from formation_quality_score import Observed  # noqa: E402

CASE: dict[str, Any] = {
    "id": "901-claims",
    "split": "tune",
    "tags": ["health"],
    "description": "Claim fields.",
    "observedAt": "2026-09-14T19:00:00Z",
    "turns": [{"role": "user", "content": "I prefer tea. I see a dentist on Friday."}],
    "facts": [
        {"terms": ["tea"], "decision": "new", "type": "preference"},
        {"terms": ["dentist"], "decision": "new", "type": "fact", "sensitivity": "health"},
    ],
}


def _row(memory_id: str, memory_type: str, sensitivity: str) -> dict[str, Any]:
    return {
        "id": memory_id, "type": memory_type, "authority": "user_stated", "strength": "soft",
        "durability": "durable", "sensitivity": sensitivity, "valid_until": None,
        "summary": "s", "when_to_use": "w",
    }  # fmt: skip


def test_type_accuracy_and_sensitivity_against_the_labels() -> None:
    case = Case.model_validate(CASE)
    chunks = [{"id": "a", "text": "The user prefers tea."}, {"id": "b", "text": "Dentist Friday."}]
    observed = Observed(receipt={}, chunks=chunks, nodes=[], edges=[], prior_ids={})
    claims = {"a": _row("a", "preference", "normal"), "b": _row("b", "preference", "normal")}
    report = claim_report([case], [observed], claims)
    assert report["typeAccuracy"] == {"rate": 0.5, "count": 1, "of": 2}
    assert report["sensitivity"] == {
        "normalLabelled": 1, "normalTagged": 1, "healthLabelled": 1, "healthTagged": 0,
    }  # fmt: skip
    assert report["distribution"]["type"] == {"preference": 2}
    assert report["distribution"]["withSummary"] == 2
