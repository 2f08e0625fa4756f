"""The FakeStore holds formations: formation-key records and lookups by content.

`FakeStore` (tests/unit/fakes.py) has the two store methods formation needs
(`find_chunks_by_content`, `get_formation_key`), commits a plan's formation-key
record with the plan (a second commit of the same key loses with
FORMATION_KEY_CLAIMED), and shows the records in `snapshot` so "nothing written"
covers them. The real adapters are proven by the contract suites.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from jennah.api.app import create_app
from jennah.domain.models import (
    CommitPlan,
    FormationKeyRecord,
    ScopeRef,
)
from jennah.errors import Aborted
from jennah.services.formation import KEY_CLAIMED
from tests.unit.fakes import Api, FakeStore, make_container

# FakeStore holds formations itself now; the name stays for the tests that use it.
FormingFakeStore = FakeStore


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
