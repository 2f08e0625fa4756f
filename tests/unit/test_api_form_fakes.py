"""A FakeStore that can also hold formations: formation-key records and lookups by content.

`FakeStore` (tests/unit/fakes.py) predates memory:form; `FormingFakeStore` adds
the two store methods formation needs (`find_chunks_by_content`,
`get_formation_key`), commits a plan's formation-key record with the plan (a
second commit of the same key loses with FORMATION_KEY_CLAIMED), and shows the
records in `snapshot` so "nothing written" covers them. The real adapters are
proven by the contract suites.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from jennah.api.app import create_app
from jennah.domain import rules
from jennah.domain.models import (
    CommitPlan,
    CommitResult,
    FormationKeyRecord,
    MemoryRecord,
    ScopeRef,
)
from jennah.errors import Aborted
from jennah.services.formation import KEY_CLAIMED
from tests.unit.fakes import Api, FakeStore, make_container


class FormingFakeStore(FakeStore):
    def __init__(self) -> None:
        super().__init__()
        self.formation_keys: dict[tuple[ScopeRef, str], FormationKeyRecord] = {}

    def apply(self, plan: CommitPlan) -> CommitResult:
        record = plan.formation_key
        if record is not None and (plan.scope, record.formation_key) in self.formation_keys:
            raise Aborted(
                f"formationKey {record.formation_key!r} was committed first by another request",
                reason=KEY_CLAIMED,
            )
        result = super().apply(plan)
        if record is not None:
            committed = record.model_copy(update={"committed_at": result.commit_timestamp})
            self.formation_keys[(plan.scope, record.formation_key)] = committed
        return result

    def find_chunks_by_content(
        self, scope: ScopeRef, content_hashes: Sequence[str], as_of: datetime | None
    ) -> list[MemoryRecord]:
        wanted = set(content_hashes)
        return [
            r
            for r in self._chunks(scope)
            if r.content_hash in wanted
            and (as_of is None or rules.is_valid_at(r.valid_at, r.invalid_at, r.retired_at, as_of))
        ]

    def get_formation_key(self, scope: ScopeRef, formation_key: str) -> FormationKeyRecord | None:
        return self.formation_keys.get((scope, formation_key))

    def destroy_scope(self, scope: ScopeRef) -> int:
        erased = super().destroy_scope(scope)
        for key in [k for k in self.formation_keys if k[0] == scope]:
            del self.formation_keys[key]
            erased += 1
        return erased

    def snapshot(self, enterprise_id: str | None = None) -> dict[str, Any]:
        rows = super().snapshot(enterprise_id)
        rows["formation_keys"] = {
            k: v.model_dump()
            for k, v in self.formation_keys.items()
            if enterprise_id is None or k[0].enterprise_id == enterprise_id
        }
        return rows


def forming_api(tmp_path: Path) -> Api:
    """The in-process API on a FormingFakeStore (and the rules model, the default)."""
    container = make_container(tmp_path, store=FormingFakeStore())
    return Api(container, create_app(container))


def test_a_second_commit_of_one_formation_key_loses() -> None:
    store = FormingFakeStore()
    scope = ScopeRef(enterprise_id="local", scope_id="bot")
    record = FormationKeyRecord(formation_key="k", fingerprint="f", receipt_json="{}")
    first = store.apply(CommitPlan(scope=scope, formation_key=record))
    assert store.get_formation_key(scope, "k") == record.model_copy(
        update={"committed_at": first.commit_timestamp}
    )
    with pytest.raises(Aborted) as lost:
        store.apply(CommitPlan(scope=scope, formation_key=record))
    assert lost.value.reason == KEY_CLAIMED
    assert store.destroy_scope(scope) == 1 and store.get_formation_key(scope, "k") is None


def test_chunks_are_found_by_content_while_valid(tmp_path: Path) -> None:
    store = FormingFakeStore()
    scope = ScopeRef(enterprise_id="local", scope_id="bot")
    api = forming_api(tmp_path)
    assert isinstance(api.store, FormingFakeStore)
    answer = api.post(
        "/v1/agents/bot/memory:commit",
        {"chunks": [{"text": "Tea.", "validAt": "2024-01-01T00:00:00Z"}]},
    )
    assert answer.status_code == 200
    (chunk,) = api.store.get_chunks(scope, answer.get_json()["chunkIds"])
    assert api.store.find_chunks_by_content(scope, [chunk.content_hash], None) == [chunk]
    early = datetime(2023, 1, 1, tzinfo=UTC)
    assert api.store.find_chunks_by_content(scope, [chunk.content_hash], early) == []
    assert store.find_chunks_by_content(scope, [chunk.content_hash], None) == []
