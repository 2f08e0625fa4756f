"""`jnh … memory forget | forget-group | suppressions`, in-process against the local API:
confirmation unless --yes, --dry-run counts only, expectedCount is the count shown,
suppressions listed and deleted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.unit.test_cli_memory import Jnh, jnh  # noqa: F401 (fixture)

FACTS = ["Ana is allergic to peanuts", "Ana plays chess on Sundays", "Bob likes jazz"]


class Recording(httpx.WSGITransport):
    """Keeps (method, path, JSON body or None) of every request."""

    def __init__(self, app: Any) -> None:
        super().__init__(app=app)
        self.calls: list[tuple[str, str, Any]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content[:1] == b"{" else None
        self.calls.append((request.method, request.url.path, body))
        return super().handle_request(request)


@pytest.fixture
def cli(jnh: Jnh) -> Jnh:  # noqa: F811
    jnh.transport = Recording(jnh.api.app)
    return jnh


def _calls(cli: Jnh, tail: str) -> list[tuple[str, str, Any]]:
    assert isinstance(cli.transport, Recording)
    return [call for call in cli.transport.calls if call[1].endswith(tail)]


def _commit(cli: Jnh, scope: str = "bot") -> list[str]:
    """The three FACTS as claims of agent `scope` (Ana's two about "Ana"); their ids."""
    chunks = [{"text": t, "about": t.split()[0]} for t in FACTS]
    out = cli.ok("agents", "memory", "commit", scope, "-f", "-", "-o", "name",
                 stdin=json.dumps({"chunks": chunks}))  # fmt: skip
    return out.split()


# forget


def test_forget_asks_first_and_a_no_changes_nothing(cli: Jnh) -> None:
    peanuts, *_ = _commit(cli)
    refused = cli("agents", "memory", "forget", "bot", peanuts, stdin="n\n")
    assert refused.exit_code == 1 and "Forget memory" in refused.stderr
    assert _calls(cli, ":forget") == []
    assert cli.ok("agents", "memory", "suppressions", "bot", "-o", "name") == ""


def test_forget_confirmed_retracts_and_prints_the_suppression(cli: Jnh) -> None:
    peanuts, *_ = _commit(cli)
    out = cli.ok("agents", "memory", "forget", "bot", peanuts, "-o", "name", stdin="y\n")
    (rule_id,) = out.split()
    assert rule_id.startswith("sup_")
    assert _calls(cli, ":forget") == [("POST", f"/v1/agents/bot/memories/{peanuts}:forget", {})]
    listed = cli.ok("agents", "memory", "suppressions", "bot", "-o", "name").split()
    assert listed == [rule_id]


def test_forget_with_yes_asks_nothing_and_answers_json(cli: Jnh) -> None:
    peanuts, *_ = _commit(cli)
    answer = cli.json("scopes", "memory", "forget", "bot", peanuts, "--yes")
    assert answer["memory"]["status"] == "retracted"
    assert answer["suppression"]["memoryId"] == peanuts
    table = cli.ok("agents", "memory", "suppressions", "bot")
    assert answer["suppression"]["id"] in table and "Ana is allergic to peanuts" in table


# forget-group


def test_forget_group_dry_run_counts_and_writes_nothing(cli: Jnh) -> None:
    _commit(cli)
    answer = cli.json("agents", "memory", "forget-group", "bot", "--about", "ana", "--dry-run")
    assert answer["count"] == 2 and answer["validateOnly"] is True
    assert [body for _, _, body in _calls(cli, ":forgetGroup")] == [
        {"about": "ana", "validateOnly": True}
    ]
    assert cli.ok("agents", "memory", "suppressions", "bot", "-o", "name") == ""


def test_forget_group_shows_the_count_and_a_no_sends_nothing_more(cli: Jnh) -> None:
    _commit(cli)
    refused = cli("agents", "memory", "forget-group", "bot", "--about", "Ana", stdin="n\n")
    assert refused.exit_code == 1 and "Forget 2 memories for good?" in refused.stderr
    assert len(_calls(cli, ":forgetGroup")) == 1  # the count only
    assert cli.ok("agents", "memory", "suppressions", "bot", "-o", "name") == ""


def test_forget_group_confirmed_sends_the_count_shown_as_expected_count(cli: Jnh) -> None:
    peanuts, chess, _ = _commit(cli)
    out = cli.ok("agents", "memory", "forget-group", "bot", "--about", "Ana", "-o", "name",
                 stdin="y\n")  # fmt: skip
    assert sorted(out.split()) == sorted([peanuts, chess])
    bodies = [body for _, _, body in _calls(cli, ":forgetGroup")]
    assert bodies == [{"about": "Ana", "validateOnly": True}, {"about": "Ana", "expectedCount": 2}]
    assert len(cli.ok("agents", "memory", "suppressions", "bot", "-o", "name").split()) == 2


def test_forget_group_with_yes_asks_nothing(cli: Jnh) -> None:
    _commit(cli)
    answer = cli.json("scopes", "memory", "forget-group", "bot", "--type", "fact", "--yes")
    assert answer["count"] == 3 and len(answer["memoryIds"]) == 3
    assert [b for _, _, b in _calls(cli, ":forgetGroup")][1] == {"type": "fact", "expectedCount": 3}


@pytest.mark.parametrize(
    "selectors", [[], ["--about", "Ana", "--type", "fact"], ["--applies-to", "a", "--about", "b"]]
)
def test_forget_group_needs_exactly_one_selector(cli: Jnh, selectors: list[str]) -> None:
    result = cli("agents", "memory", "forget-group", "bot", *selectors, "--yes")
    assert result.exit_code == 2
    assert "exactly one of --applies-to, --about or --type" in result.stderr
    assert _calls(cli, ":forgetGroup") == []


# suppressions


def test_suppressions_lists_pages_and_deletes_one_after_asking(cli: Jnh) -> None:
    peanuts, chess, _ = _commit(cli)
    cli.ok("agents", "memory", "forget-group", "bot", "--about", "Ana", "--yes")
    first = cli.json("agents", "memory", "suppressions", "bot", "--page-size", "1")
    (rule,) = first["suppressions"]
    rest = cli.json("agents", "memory", "suppressions", "bot", "--page-size", "1",
                    "--page-token", first["nextPageToken"])  # fmt: skip
    ids = [rule["id"], *(r["id"] for r in rest["suppressions"])]
    assert {r["memoryId"] for r in (rule, *rest["suppressions"])} == {peanuts, chess}

    kept = cli("agents", "memory", "suppressions", "bot", "--delete", ids[0], stdin="n\n")
    assert kept.exit_code == 1 and "Delete suppression" in kept.stderr
    assert _calls(cli, f"/suppressions/{ids[0]}") == []
    assert cli.ok("agents", "memory", "suppressions", "bot", "--delete", ids[0], "--yes") == (
        ids[0] + "\n"
    )
    assert _calls(cli, f"/suppressions/{ids[0]}") == [
        ("DELETE", f"/v1/agents/bot/suppressions/{ids[0]}", None)
    ]
    assert cli.ok("agents", "memory", "suppressions", "bot", "-o", "name").split() == ids[1:]
    missing = cli("agents", "memory", "suppressions", "bot", "--delete", ids[0], "--yes")
    assert missing.exit_code != 0 and "NOT_FOUND" in missing.stderr


def test_help_shows_examples() -> None:
    from click.testing import CliRunner

    from jennah.cli.main import cli as root

    for command in ("forget", "forget-group", "suppressions"):
        result = CliRunner().invoke(root, ["agents", "memory", command, "--help"])
        assert result.exit_code == 0 and "Examples:" in result.output, command


def test_export_writes_the_suppressions_and_import_brings_them_back(
    cli: Jnh, tmp_path: Path
) -> None:
    peanuts, *_ = _commit(cli)
    rule = cli.json("agents", "memory", "forget", "bot", peanuts, "--yes")["suppression"]["id"]
    folder = tmp_path / "export"
    cli.ok("agents", "memory", "export", "bot", str(folder))
    assert (folder / "suppressions.jsonl").is_file()
    answer = cli.json("scopes", "memory", "import", "copy", str(folder))
    assert answer["suppressionsImported"] == "1"
    assert cli.ok("scopes", "memory", "suppressions", "copy", "-o", "name").split() == [rule]
    cli.ok("agents", "memory", "suppressions", "bot", "--delete", rule, "--yes")
    cli.ok("agents", "memory", "export", "bot", str(folder), "--overwrite")
    assert not (folder / "suppressions.jsonl").exists()  # a stale rule file is not left
