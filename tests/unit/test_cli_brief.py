"""`jnh agents memory brief` and `jnh scopes memory brief` against the in-process API."""

from __future__ import annotations

from pathlib import Path

import pytest

from jennah.auth import LocalCredentials, credentials_path
from jennah.domain.models import CommitPlan, MemoryRecord, MemoryType, ScopeRef, Strength
from tests.unit.fakes import TOKEN, Api
from tests.unit.test_cli_memory import Jnh

SCOPE = ScopeRef(enterprise_id="local", scope_id="bot")


@pytest.fixture
def jnh(tmp_path: Path) -> Jnh:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    credentials_path(data_dir).write_text(LocalCredentials(token=TOKEN).model_dump_json())
    return Jnh(Api.create(tmp_path), data_dir)


@pytest.fixture
def seeded(jnh: Jnh) -> Jnh:
    jnh.api.post("/v1/scopes", {"scopeId": "bot", "kind": "AGENT"})
    return jnh


def test_brief_prints_the_brief_as_is(seeded: Jnh) -> None:
    rule = MemoryRecord(id="r1", scope=SCOPE, text="Call before booking",
                        type=MemoryType.DIRECTIVE, strength=Strength.HARD)  # fmt: skip
    seeded.api.store.apply(CommitPlan(scope=SCOPE, chunks=[rule]))
    printed = seeded.ok("agents", "memory", "brief", "bot")
    assert printed.startswith('<memory-brief scope="bot" variant="full">\n')
    assert printed.endswith("</memory-brief>\n")
    assert '- (hard) "Call before booking" memory://bot/r1\n' in printed
    assert printed == seeded.ok("scopes", "memory", "brief", "bot", "-o", "name")


def test_brief_json_carries_the_token_count_and_the_shared_variant(seeded: Jnh) -> None:
    answer = seeded.json("scopes", "memory", "brief", "bot", "--variant", "shared")
    assert set(answer) == {"brief", "tokenCount"} and 0 < answer["tokenCount"] <= 2000
    assert 'variant="shared"' in answer["brief"] and "Last conversation" not in answer["brief"]


def test_brief_of_a_missing_scope_fails_cleanly(jnh: Jnh) -> None:
    result = jnh("agents", "memory", "brief", "nobody")
    assert result.exit_code != 0 and "NOT_FOUND" in result.stderr + result.stdout
    bad = jnh("agents", "memory", "brief", "bot", "--variant", "private")
    assert bad.exit_code == 2
