"""`jnh agents memory dream` and `jnh scopes memory dream` against the in-process API."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from jennah.auth import LocalCredentials, credentials_path
from jennah.domain.models import CommitPlan, MemoryRecord, ScopeRecord, ScopeRef, Status
from tests.unit.fakes import TOKEN, Api
from tests.unit.test_cli_memory import Jnh

SCOPE = ScopeRef(enterprise_id="local", scope_id="bot")


@pytest.fixture
def jnh(tmp_path: Path) -> Jnh:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    credentials_path(data_dir).write_text(LocalCredentials(token=TOKEN).model_dump_json())
    return Jnh(Api.create(tmp_path), data_dir)


def test_dream_runs_the_pass_and_prints_what_changed(jnh: Jnh) -> None:
    gone = MemoryRecord(id="chk_gone", scope=SCOPE, text="pizza night is tonight",
                        valid_until=datetime.now(UTC) - timedelta(minutes=1))  # fmt: skip
    jnh.api.store.apply(CommitPlan(scope=SCOPE, registration=ScopeRecord(scope=SCOPE, kind="agent"),
                                   chunks=[gone]))  # fmt: skip
    printed = jnh.ok("agents", "memory", "dream", "bot")
    assert printed.split("\n")[0].split() == ["EXPIRED", "1"]
    assert "BRIEF_CHANGED  True" in printed
    (after,) = jnh.api.store.get_chunks(SCOPE, ["chk_gone"])
    assert after.status is Status.EXPIRED
    answer = json.loads(jnh.ok("scopes", "memory", "dream", "bot", "-o", "json"))
    assert answer == {"expired": 0, "promoted": 0, "decayed": 0, "briefChanged": False}
