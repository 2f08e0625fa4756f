"""The claim fields formed memories carry (issue 16), scored against the set's labels.

Read from the server's SQLite file after it stops (`<data-dir>/memory.db`,
table memory_records), by each formed chunk's id: memory:inspect carries no
claim fields on the wire yet. Reported:

- distribution: over formed chunks (priors aside), the count of each type,
  authority, strength, durability and sensitivity, how many have a validUntil, and
  how many have a summary and a whenToUse (every one should);
- type accuracy: over labelled facts with a `type` (relationships aside) that a
  formed chunk mentions (all its terms), right when one of those chunks has the
  labelled type;
- sensitivity: over labelled facts some formed chunk mentions, the share tagged as
  labelled for `health` and `financial` (finances), and the share of facts labelled
  with no sensitivity that are tagged `normal`. The set's other labels (family,
  legal, location, religion) have no claim value and are left out.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from formation_quality_cases import Case, mentions_all
from formation_quality_score import Observed

FIELDS = ("type", "authority", "strength", "durability", "sensitivity")
_SENSITIVITY = {"health": "health", "financial": "finances"}


def read_claims(db_path: Path) -> dict[str, dict[str, Any]]:
    """Every stored chunk's claim fields by id (ids are content-derived: one id holds
    the same words, and code decides the fields from the words)."""
    if not db_path.exists():
        return {}
    columns = ", ".join(("id", *FIELDS, "valid_until", "summary", "when_to_use"))
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as conn:
        rows = conn.execute(f"SELECT {columns} FROM memory_records").fetchall()
    names = ("id", *FIELDS, "valid_until", "summary", "when_to_use")
    return {row[0]: dict(zip(names, row, strict=True)) for row in rows}


def claim_report(
    cases: Sequence[Case], observed: Sequence[Observed], claims: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    formed = [_formed(seen, claims) for seen in observed]
    every = [row for rows in formed for row in rows]
    distribution: dict[str, Any] = {
        name: dict(Counter(str(row[name]) for row in every)) for name in FIELDS
    }
    distribution |= {
        "chunks": len(every),
        "withValidUntil": sum(1 for row in every if row["valid_until"] is not None),
        "withSummary": sum(1 for row in every if row["summary"]),
        "withWhenToUse": sum(1 for row in every if row["when_to_use"]),
    }
    typed = right = 0
    sensitive: Counter[str] = Counter()
    for case, rows in zip(cases, formed, strict=True):
        for fact in case.facts:
            if fact.decision not in ("new", "revised"):
                continue
            mentioned = [row for row in rows if mentions_all(row["text"], fact.terms)]
            if not mentioned:
                continue
            if fact.type is not None and fact.type != "relationship":
                typed += 1
                right += any(row["type"] == fact.type for row in mentioned)
            label = _SENSITIVITY.get(
                fact.sensitivity or "", "normal" if not fact.sensitivity else ""
            )
            if label:
                sensitive[f"{label}Labelled"] += 1
                sensitive[f"{label}Tagged"] += any(row["sensitivity"] == label for row in mentioned)
    return {
        "distribution": distribution,
        "typeAccuracy": {"rate": right / typed if typed else None, "count": right, "of": typed},
        "sensitivity": dict(sensitive),
    }


def _formed(seen: Observed, claims: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    priors = set(seen.prior_ids.values())
    return [
        claims[chunk["id"]] | {"text": chunk["text"]}
        for chunk in seen.chunks
        if chunk["id"] not in priors and chunk["id"] in claims
    ]
