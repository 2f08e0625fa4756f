"""`jnh agents notes …` and `jnh scopes notes …` (keyed memory) against the API on fakes."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_cli_memory import Jnh, jnh  # noqa: F401  (the fixture)


def test_remember_get_list_and_forget(jnh: Jnh, tmp_path: Path) -> None:  # noqa: F811
    entry = jnh.json("agents", "notes", "remember", "bot", "harbor-status-reports",
                     "--content", "Outcome first, then blockers.")  # fmt: skip
    assert (entry["key"], entry["version"]) == ("harbor-status-reports", "1")
    text = tmp_path / "status.md"
    text.write_text("Under 200 words, with links to the tasks.")
    updated = jnh.json("scopes", "notes", "remember", "bot", "harbor-status-reports",
                       "--from-file", str(text), "--expected-version", "1")  # fmt: skip
    assert (updated["version"], updated["content"]) == ("2", text.read_text())
    piped = jnh.ok("agents", "notes", "remember", "bot", "other", "--from-file", "-",
                   "-o", "name", stdin="from stdin")  # fmt: skip
    assert piped.split() == ["other"]
    assert jnh.json("agents", "notes", "get", "bot", "other")["content"] == "from stdin"
    listed = jnh.ok("agents", "notes", "list", "bot", "-o", "name").split()
    assert listed == ["other", "harbor-status-reports"]
    table = jnh.ok("agents", "notes", "list", "bot")
    assert "harbor-status-reports" in table and "KEY" in table.upper()
    assert jnh.ok("agents", "notes", "forget", "bot", "other", "--yes") == "Forgot other.\n"
    assert jnh.ok("agents", "notes", "list", "bot", "-o", "name").split() == [
        "harbor-status-reports"
    ]


def test_a_stale_expected_version_exits_with_the_server_error(jnh: Jnh) -> None:  # noqa: F811
    jnh.ok("agents", "notes", "remember", "bot", "k", "--content", "one")
    jnh.ok("agents", "notes", "remember", "bot", "k", "--content", "two", "--expected-version", "1")
    result = jnh("agents", "notes", "remember", "bot", "k", "--content", "x",
                 "--expected-version", "1")  # fmt: skip
    assert result.exit_code != 0
    assert "version 2" in result.stderr


def test_forget_asks_for_confirmation(jnh: Jnh) -> None:  # noqa: F811
    jnh.ok("agents", "notes", "remember", "bot", "k", "--content", "one")
    refused = jnh("agents", "notes", "forget", "bot", "k")  # stdin is not a terminal
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    assert jnh.json("agents", "notes", "get", "bot", "k")["key"] == "k"


def test_remember_needs_exactly_one_source(jnh: Jnh) -> None:  # noqa: F811
    result = jnh("agents", "notes", "remember", "bot", "k")
    assert result.exit_code == 2 and "--content" in result.stderr


def test_link_recall_unlink_and_search(jnh: Jnh) -> None:  # noqa: F811
    jnh.ok("agents", "notes", "remember", "bot", "project-harbor", "--content", "Harbor relaunch")
    jnh.ok("agents", "notes", "remember", "bot", "conventions", "--content", "British spelling")
    linked = jnh.json("agents", "notes", "link", "bot", "project-harbor", "conventions")
    assert linked["links"] == ["conventions"]
    recalled = jnh.json("agents", "notes", "recall", "bot", "harbor plan", "--budget", "200")
    assert [(m["key"], m["via"]) for m in recalled["memories"]] == [
        ("project-harbor", "MATCH"),
        ("conventions", "LINK"),
    ]
    table = jnh.ok("scopes", "notes", "recall", "bot", "harbor plan", "--budget", "200")
    assert "LINK" in table and "of 200 tokens" in table
    assert (
        jnh.json("agents", "notes", "unlink", "bot", "conventions", "project-harbor")["links"] == []
    )
    found = jnh.ok("agents", "notes", "search", "bot", "british", "-o", "name")
    assert found.split() == ["conventions"]
