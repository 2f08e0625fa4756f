"""`jnh scopes create --time-zone` and `jnh scopes update SCOPE --time-zone`."""

from __future__ import annotations

from pathlib import Path

import pytest

from jennah.auth import LocalCredentials, credentials_path
from tests.unit.fakes import TOKEN, Api
from tests.unit.test_cli_memory import Jnh


@pytest.fixture
def jnh(tmp_path: Path) -> Jnh:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    credentials_path(data_dir).write_text(LocalCredentials(token=TOKEN).model_dump_json())
    return Jnh(Api.create(tmp_path), data_dir)


def test_create_with_a_time_zone_and_list_it(jnh: Jnh) -> None:
    created = jnh.json("scopes", "create", "user.ana", "--time-zone", "Europe/Lisbon")
    assert created["timeZone"] == "Europe/Lisbon"
    jnh.ok("scopes", "create", "bot.a", "--kind", "agent")
    table = jnh.ok("scopes", "list").splitlines()
    assert table[0].split()[:3] == ["SCOPE_ID", "KIND", "TIME_ZONE"]
    assert table[1].split()[:3] == ["bot.a", "AGENT", "UTC"]
    assert table[2].split()[:3] == ["user.ana", "SUBJECT", "Europe/Lisbon"]
    assert "UTC" in jnh.ok("agents", "list")


def test_update_sets_the_time_zone_of_a_scope_or_an_agent_workspace(jnh: Jnh) -> None:
    jnh.ok("scopes", "create", "bot.a", "--kind", "agent")
    updated = jnh.json("scopes", "update", "bot.a", "--time-zone", "America/New_York")
    assert (updated["scopeId"], updated["timeZone"]) == ("bot.a", "America/New_York")
    assert jnh.json("agents", "list")["agents"][0]["timeZone"] == "America/New_York"
    assert jnh.ok("scopes", "update", "bot.a", "--time-zone", "UTC", "-o", "name") == "bot.a\n"


def test_update_refusals(jnh: Jnh) -> None:
    jnh.ok("scopes", "create", "user.ana")
    bad = jnh("scopes", "update", "user.ana", "--time-zone", "Atlantis/Capital")
    assert bad.exit_code == 3 and "timeZone 'Atlantis/Capital' is not an IANA" in bad.stderr
    assert jnh("scopes", "update", "ghost", "--time-zone", "UTC").exit_code == 4
    nothing = jnh("scopes", "update", "user.ana")
    assert nothing.exit_code == 2 and "--time-zone" in nothing.stderr
    assert jnh("scopes", "create", "x", "--time-zone", "Nowhere").exit_code == 3
