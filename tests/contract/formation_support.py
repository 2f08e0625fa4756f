"""Helpers for the formation contract tests: scripted answers, turns, running `form`.

Extraction answers are built with `fact` / `relationship`; reconciliation
answers with `verdicts`, which reads the candidate indexes from the prompt's
data block, so a test names candidates by text instead of by position.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jennah.adapters.models.scripted import ScriptedModel
from jennah.domain import rules
from jennah.domain.formation import FormationReceipt, Turn, TurnRole
from jennah.domain.models import MemoryRecord, ScopeRecord, ScopeRef
from jennah.ports.prompts import read_data
from jennah.ports.store import MemoryStore
from jennah.services.formation import FormationCommand, FormationUsage
from tests.contract.conftest import EMBEDDER, row_counts
from tests.support.formation import form

# The receipt time of every formation here (the spec's example receipt).
RECEIVED = datetime(2026, 8, 25, 8, 48, 1, tzinfo=UTC)


def at(year: int, month: int = 1, day: int = 1, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def user(content: str) -> Turn:
    return Turn(role=TurnRole.USER, content=content)


def assistant(content: str) -> Turn:
    return Turn(role=TurnRole.ASSISTANT, content=content)


def fact(
    text: str,
    turns: Sequence[int] = (0,),
    quote: str | None = None,
    *,
    memory_type: str = "fact",
    attributes: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An extracted fact; the quote defaults to the text (so cite a turn that says it)."""
    return {
        "kind": "CANDIDATE_KIND_FACT",
        "text": text,
        "memory_type": memory_type,
        "turns": list(turns),
        "quote": text if quote is None else quote,
        "attributes": attributes or {},
    }


def relationship(
    subject: str,
    relation: str,
    obj: str,
    turns: Sequence[int] = (0,),
    quote: str = "",
    *,
    text: str | None = None,
    subject_class: str | None = None,
    object_class: str | None = None,
    attributes: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "kind": "CANDIDATE_KIND_RELATIONSHIP",
        "text": text or f"{subject} {relation} {obj}",
        "turns": list(turns),
        "quote": quote,
        "attributes": attributes or {},
        "subject": {"name": subject, "entity_class": subject_class},
        "relation": relation,
        "object": {"name": obj, "entity_class": object_class},
    }


def extraction(*candidates: dict[str, Any]) -> dict[str, Any]:
    return {"candidates": list(candidates)}


def verdicts(
    *choices: tuple[str | int, str, str | None],
) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    """A reconciliation answer: (candidate text or index, "new"|"known"|"revised", matchedId).

    Every choice must name a candidate the prompt carries (so a test notices a
    candidate that was decided in code and never reached the model)."""

    def answer(prompt: str, _schema: dict[str, Any]) -> dict[str, Any]:
        sent = read_data(prompt)["candidates"]
        index = {c["text"]: c["candidateIndex"] for c in sent}
        index.update({c["candidateIndex"]: c["candidateIndex"] for c in sent})
        missing = [which for which, _, _ in choices if which not in index]
        assert not missing, f"not sent to reconciliation: {missing}"
        return {
            "decisions": [
                {"candidate_index": index[which], "decision": decision, "matched_id": matched}
                for which, decision, matched in choices
            ]
        }

    return answer


def command(
    scope: ScopeRef,
    turns: Sequence[Turn],
    *,
    observed_at: datetime | None = None,
    formation_key: str | None = None,
    **extra: Any,
) -> FormationCommand:
    return FormationCommand(
        scope=scope,
        registration=ScopeRecord(scope=scope, kind="agent", created_by="user:tester"),
        caller="user:tester",
        turns=list(turns),
        observed_at=observed_at,
        formation_key=formation_key,
        **extra,
    )


def run(
    store: MemoryStore,
    scope: ScopeRef,
    turns: Sequence[Turn],
    model: ScriptedModel,
    *,
    received: datetime = RECEIVED,
    usage: FormationUsage | None = None,
    **extra: Any,
) -> FormationReceipt:
    """Form `turns` into `scope` with the scripted model, received at `received`."""
    return form(
        command(scope, turns, **extra), store, EMBEDDER, model, lambda: received, usage=usage
    )


def scripted(*answers: Any) -> ScriptedModel:
    return ScriptedModel(list(answers))


def chunk(
    store: MemoryStore, scope: ScopeRef, text: str, valid_at: datetime | None = None
) -> MemoryRecord:
    (record,) = store.get_chunks(scope, [rules.chunk_id(text, valid_at)])
    return record


def decisions(receipt: FormationReceipt) -> list[str]:
    return [c.decision.value.removeprefix("MEMORY_DECISION_") for c in receipt.candidates]


def written_rows(store: MemoryStore, scope: ScopeRef) -> dict[str, int]:
    """Rows of the scope in every table, zero counts left out."""
    return {table: n for table, n in row_counts(store, scope).items() if n}


def evidence_lines(store: MemoryStore, scope: ScopeRef) -> list[tuple[str, str, str]]:
    """(memory id, ref, quote) of every evidence line of the scope, read below the port."""
    from jennah.adapters.spanner.store import SpannerStore
    from jennah.adapters.sqlite.store import SqliteStore

    sql = "SELECT id, ref, quote FROM evidence WHERE enterprise_id = {e} AND scope_id = {s}"
    if isinstance(store, SqliteStore):
        return _sqlite_rows(store.path, sql.format(e="?", s="?"), scope)
    assert isinstance(store, SpannerStore)
    return _spanner_rows(sql.format(e="@e", s="@s"), scope)


def _sqlite_rows(path: Path, sql: str, scope: ScopeRef) -> list[tuple[str, str, str]]:
    from pysqlite3 import dbapi2

    conn = dbapi2.connect(str(path))
    try:
        rows = conn.execute(sql + " ORDER BY id, ref", (scope.enterprise_id, scope.scope_id))
        return [tuple(row) for row in rows]
    finally:
        conn.close()


def _spanner_rows(sql: str, scope: ScopeRef) -> list[tuple[str, str, str]]:
    from google.cloud.spanner_v1 import param_types

    from tests.support.spanner_emulator import spanner_test_database

    with spanner_test_database().snapshot() as snapshot:
        rows = snapshot.execute_sql(
            sql + " ORDER BY id, ref",
            params={"e": scope.enterprise_id, "s": scope.scope_id},
            param_types={"e": param_types.STRING, "s": param_types.STRING},
            timeout=30,
        )
        return [tuple(row) for row in rows]
