"""`jnh agents|scopes memory edit ID MEMORY_ID --text T [--summary S] [--dry-run]`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jennah.auth import LocalCredentials, credentials_path
from jennah.domain import rules
from tests.unit.fakes import TOKEN, Api
from tests.unit.test_cli_memory import Jnh
from tests.unit.test_cli_vocabulary import Counting

OLD, NEW = "Practice is on Tuesdays", "Practice is on Thursdays"
OLD_ID = rules.chunk_id(OLD, None)


@pytest.fixture
def jnh(tmp_path: Path) -> Jnh:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    credentials_path(data_dir).write_text(LocalCredentials(token=TOKEN).model_dump_json())
    jnh = Jnh(Api.create(tmp_path), data_dir)
    for collection, scope in (("agents", "bot"), ("scopes", "team.x")):
        jnh.ok(collection, "memory", "commit", scope, "-f", "-",
               stdin=json.dumps({"chunks": [{"text": OLD, "type": "directive"}]}))  # fmt: skip
    return jnh


@pytest.mark.parametrize(("collection", "scope"), [("agents", "bot"), ("scopes", "team.x")])
def test_edit_prints_the_new_claim_and_the_superseded_one(
    jnh: Jnh, collection: str, scope: str
) -> None:
    out = jnh.ok(collection, "memory", "edit", scope, OLD_ID, "--text", NEW, "--summary", "Thu")
    new_block, old_block = out.split("\n\n")
    assert new_block.startswith("memory (new)\nID ") and old_block.startswith("superseded\nID ")
    assert "user_explicit" in new_block and OLD_ID in new_block and "Thu" in new_block
    assert "superseded" in old_block.splitlines()[2] and OLD in old_block


def test_edit_json_and_name_outputs(jnh: Jnh) -> None:
    body = jnh.json("agents", "memory", "edit", "bot", OLD_ID, "--text", NEW)
    assert body["memory"]["supersedes"] == OLD_ID == body["superseded"]["id"]
    assert body["memory"]["summary"] == NEW  # derived from the text
    named = jnh.ok("scopes", "memory", "edit", "team.x", OLD_ID, "--text", NEW, "-o", "name")
    (new_id,) = named.split()
    assert new_id.startswith("chk_") and new_id != OLD_ID
    evidence = jnh.json("scopes", "memory", "evidence", "team.x", new_id)["evidence"]
    assert [(e["ref"], e["quote"]) for e in evidence] == [(f"memory://team.x/{new_id}", NEW)]


def test_dry_run_prints_the_request_and_sends_nothing(jnh: Jnh) -> None:
    counting = Counting(jnh.transport)
    jnh.transport = counting  # type: ignore[assignment]
    out = jnh.ok("agents", "memory", "edit", "bot", OLD_ID, "--text", NEW, "--summary", "S",
                 "--dry-run")  # fmt: skip
    first, _, rest = out.partition("\n")
    assert first == f"POST /v1/agents/bot/memories/{OLD_ID}:edit"
    assert json.loads(rest) == {"text": NEW, "summary": "S"}
    assert counting.requests == []


def test_an_api_key_is_refused_locally(jnh: Jnh) -> None:
    key = jnh.json("keys", "create", "--role", "root")["keyString"]
    counting = Counting(jnh.transport)
    jnh.transport = counting  # type: ignore[assignment]
    refused = jnh("agents", "memory", "edit", "bot", OLD_ID, "--text", NEW, "--token", key)
    assert refused.exit_code == 5, refused.stderr
    assert "agent.memory:edit" in refused.stderr and "jnh sent nothing" in refused.stderr
    assert counting.requests == []


def test_a_refusal_is_printed_and_the_text_is_required(jnh: Jnh) -> None:
    missing = jnh("agents", "memory", "edit", "bot", "chk_missing", "--text", NEW)
    assert missing.exit_code != 0 and "chk_missing" in missing.stderr
    no_text = jnh("agents", "memory", "edit", "bot", OLD_ID)
    assert no_text.exit_code == 2 and "--text" in no_text.stderr


def test_help_has_examples() -> None:
    from click.testing import CliRunner

    from jennah.cli.main import cli

    out = CliRunner().invoke(cli, ["scopes", "memory", "edit", "--help"]).stdout
    assert "Examples:" in out and "jnh scopes memory edit bot.support" in out
