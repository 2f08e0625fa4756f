"""What `jnh` reads: filters, instants, JSON/YAML documents, help and exit codes."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from jennah.auth import LocalCredentials, write_local_credentials
from jennah.cli import client, render
from jennah.cli.inputs import parse_document, parse_filter, parse_instant
from jennah.cli.main import cli


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("team=eng", {"key": "team", "value": "eng", "operator": "OPERATOR_EQUALS"}),
        ("team!=eng", {"key": "team", "value": "eng", "operator": "OPERATOR_NOT_EQUALS"}),
        ("team:in=a,b", {"key": "team", "values": ["a", "b"], "operator": "OPERATOR_IN"}),
        ("url=a=b", {"key": "url", "value": "a=b", "operator": "OPERATOR_EQUALS"}),
        ("jennah.source_step=frm_1",
         {"key": "jennah.source_step", "value": "frm_1", "operator": "OPERATOR_EQUALS"}),
    ],
)  # fmt: skip
def test_filters(text: str, expected: dict[str, object]) -> None:
    assert parse_filter(text) == expected


def test_instants_are_sent_as_rfc3339_utc() -> None:
    assert parse_instant("2024-05-01T18:00:00+09:00", "--t") == "2024-05-01T09:00:00Z"
    assert parse_instant("2024-05-01T09:00:00Z", "--t") == "2024-05-01T09:00:00Z"
    local_midnight = datetime(2024, 5, 1).astimezone()
    assert parse_instant("2024-05-01", "--t") == parse_instant(local_midnight.isoformat(), "--t")
    with pytest.raises(click.BadParameter):
        parse_instant("last tuesday", "--t")


def test_yaml_keeps_timestamps_as_written() -> None:
    doc = parse_document("chunks:\n  - {text: a, validAt: 2024-05-01T09:00:00Z}\n", "f", "-f")
    assert doc == {"chunks": [{"text": "a", "validAt": "2024-05-01T09:00:00Z"}]}
    assert parse_document('{"a": 1}', "f", "-f") == {"a": 1}
    with pytest.raises(click.BadParameter):
        parse_document("[1, 2]", "f", "-f")
    with pytest.raises(click.BadParameter):
        parse_document("a: [", "f", "-f")


def test_table_cells() -> None:
    assert render.header("supersededBy") == "SUPERSEDED_BY"
    assert render.header("nodeType") == "CLASS"
    assert render.cell(None) == "-"
    assert render.cell({"a": "1", "b": "2"}) == "a=1,b=2"
    assert render.cell("line one\nline two") == "line one line two"
    assert len(render.cell("x" * 500)) == render.MAX_CELL


def test_every_status_has_a_documented_exit_code() -> None:
    for status, code in client.EXIT_CODES.items():
        assert f"  {code} " in client.EXIT_CODES_HELP
        assert status in client.EXIT_CODES_HELP
    assert "10  cannot connect" in client.EXIT_CODES_HELP


def test_help_documents_exit_codes() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    assert "Exit codes:" in result.stdout and "10  cannot connect" in result.stdout


def _commands(group: click.Group, prefix: list[str]) -> list[list[str]]:
    found: list[list[str]] = []
    for name, command in group.commands.items():
        path = [*prefix, name]
        found.append(path)
        if isinstance(command, click.Group):
            found += _commands(command, path)
    return found


@pytest.mark.parametrize("path", _commands(cli, []), ids=" ".join)
def test_every_command_explains_itself(path: list[str]) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0
    assert len(result.stdout) > 200
    assert "Example" in result.stdout
    assert "jnh " in result.stdout.split("Example", 1)[1]


def test_print_token_prints_the_data_dirs_root_credential(tmp_path: Path) -> None:
    write_local_credentials(tmp_path, LocalCredentials(token="ju_cm9vdA_0123"))
    first = CliRunner().invoke(cli, ["auth", "print-token", "--data-dir", str(tmp_path)])
    assert first.exit_code == 0
    assert first.stdout.strip() == "ju_cm9vdA_0123"
    via_env = CliRunner().invoke(cli, ["auth", "print-token"],
                                 env={"JENNAH_DATA_DIR": str(tmp_path)})  # fmt: skip
    assert via_env.stdout.strip() == "ju_cm9vdA_0123"


def test_print_token_without_a_server_start_says_what_to_do(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["auth", "print-token", "--data-dir", str(tmp_path)])
    assert result.exit_code == 3
    assert "FAILED_PRECONDITION" in result.stderr and "jnh serve" in result.stderr
