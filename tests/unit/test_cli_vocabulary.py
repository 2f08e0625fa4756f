"""`jnh vocabulary` (and `jnh vocab`) against the in-process API, over HTTP (WSGI):
flags and files, the required '=', the changes shown before declaring, confirmation,
the three states of `get`, and the local refusal of an API key."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from jennah.auth import LocalCredentials, credentials_path
from jennah.cli import vocabulary as vocabulary_commands
from jennah.cli.vocabulary import describe_changes, flag_vocabulary
from tests.unit.fakes import ENTERPRISE, TOKEN, Api
from tests.unit.test_cli_memory import Jnh

DECLARE_DEFAULT = (
    "vocabulary", "declare", "--yes",
    "--class", "Person=an individual human being, including colleagues",
    "--class", "Organization=a company, employer, school or agency",
    "--relation", "WORKS_AT=employment of a person by an organization",
    "--signature", "WORKS_AT=Person:Organization",
)  # fmt: skip
SUPPORT_YAML = """\
vocabulary:
  entityClasses:
    - name: Ticket
      description: a support case
    - name: Person
      description: a customer
"""


@pytest.fixture
def jnh(tmp_path: Path) -> Jnh:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    credentials_path(data_dir).write_text(LocalCredentials(token=TOKEN).model_dump_json())
    return Jnh(Api.create(tmp_path), data_dir)


class Counting(httpx.BaseTransport):
    """The harness's transport, counting the requests that reach it."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.requests: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(f"{request.method} {request.url.path}")
        return self.inner.handle_request(request)


def printed(stderr: str) -> list[str]:
    """What jnh printed on standard error, without the in-process server's log lines."""
    return [line for line in stderr.splitlines() if not line.startswith('{"severity"')]


def stored(jnh: Jnh, scope_id: str | None) -> Any:
    declaration = jnh.api.vocabularies.get(ENTERPRISE, scope_id)
    return None if declaration is None else declaration.vocabulary


# declare with flags


def test_declare_with_flags_puts_the_body_and_prints_the_three_lines(jnh: Jnh) -> None:
    result = jnh(*DECLARE_DEFAULT)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[:3] == [
        "LEVEL        enterprise",
        "DECLARATION  2 entity classes and 1 relation type (declared "
        + result.stdout.splitlines()[1].split("declared ")[1],
        "RESOLVES     this declaration",
    ]
    assert "Organization  a company, employer, school or agency" in result.stdout
    assert "WORKS_AT  employment of a person by an organization  Person:Organization" in (
        result.stdout
    )
    vocabulary = stored(jnh, None)
    assert [c.name for c in vocabulary.entity_classes] == ["Person", "Organization"]
    (relation,) = vocabulary.relation_types
    assert [(s.source_class, s.target_class) for s in relation.signatures] == [
        ("Person", "Organization")
    ]


def test_the_separator_is_required_even_with_an_empty_description(jnh: Jnh) -> None:
    refused = jnh("vocabulary", "declare", "--yes", "--class", "Person")
    assert refused.exit_code == 2
    assert "the '=' is required even when the description is empty (--class Person=)" in (
        refused.stderr
    )
    for flag in ("--relation", "--class"):
        assert jnh("vocabulary", "declare", "--yes", flag, "=desc").exit_code == 2
    accepted = jnh.json("vocabulary", "declare", "--yes", "--class", "Person=")
    assert accepted["resolved"]["entityClasses"] == [{"name": "Person", "description": ""}]


def test_a_signature_must_name_a_relation_declared_on_the_command_line(jnh: Jnh) -> None:
    refused = jnh("vocabulary", "declare", "--yes", "--class", "Person=", "--class", "Org=",
                  "--signature", "WORKS_AT=Person:Org")  # fmt: skip
    assert refused.exit_code == 2
    assert "no --relation on this command line declares" in refused.stderr
    malformed = jnh("vocabulary", "declare", "--yes", "--class", "Person=",
                    "--relation", "KNOWS=", "--signature", "KNOWS=Person")  # fmt: skip
    assert malformed.exit_code == 2 and "NAME=SOURCE:TARGET" in malformed.stderr
    assert stored(jnh, None) is None


def test_flag_vocabulary_attaches_signatures_to_their_relation_in_order() -> None:
    assert flag_vocabulary(
        ["A=a", "B= b "], ["R=r", "S="], ["S=A:B", "R=B:A", "S=B:B"]
    ) == {
        "entityClasses": [{"name": "A", "description": "a"}, {"name": "B", "description": "b"}],
        "relationTypes": [
            {"name": "R", "description": "r",
             "signatures": [{"sourceClass": "B", "targetClass": "A"}]},
            {"name": "S", "description": "",
             "signatures": [{"sourceClass": "A", "targetClass": "B"},
                            {"sourceClass": "B", "targetClass": "B"}]},
        ],
    }  # fmt: skip


def test_a_signature_naming_an_undeclared_class_is_the_servers_invalid_argument(
    jnh: Jnh,
) -> None:
    refused = jnh("vocabulary", "declare", "--yes", "--class", "Person=",
                  "--relation", "KNOWS=", "--signature", "KNOWS=Person:Robot")  # fmt: skip
    assert refused.exit_code == 3
    assert "vocabulary.relationTypes[0].signatures[0].targetClass" in refused.stderr


def test_exactly_one_source_is_given(jnh: Jnh, tmp_path: Path) -> None:
    path = tmp_path / "v.yaml"
    path.write_text(SUPPORT_YAML)
    for args in ((), ("--none", "--class", "A="), ("--none", "--from-file", str(path))):
        result = jnh("vocabulary", "declare", "--yes", *args)
        assert result.exit_code == 2 and "one way" in result.stderr


# declare from a file, or empty


@pytest.mark.parametrize("wrapped", [True, False])
def test_declare_from_a_yaml_or_json_file_with_or_without_the_wrapper(
    jnh: Jnh, tmp_path: Path, wrapped: bool
) -> None:
    vocabulary = {"entityClasses": [{"name": "Ticket", "description": "a support case"}]}
    path = tmp_path / "v.json"
    path.write_text(json.dumps({"vocabulary": vocabulary} if wrapped else vocabulary))
    answer = jnh.json("vocabulary", "declare", "--scope", "bot.support", "--from-file",
                      str(path), "--yes")  # fmt: skip
    assert answer["resolved"]["entityClasses"] == vocabulary["entityClasses"]
    assert stored(jnh, None) is None and stored(jnh, "bot.support") is not None
    path.write_text(SUPPORT_YAML)
    jnh.ok("vocab", "declare", "--scope", "bot.support", "-f", str(path), "--yes")
    assert [c.name for c in stored(jnh, "bot.support").entity_classes] == ["Ticket", "Person"]


def test_a_file_naming_another_level_is_refused(jnh: Jnh, tmp_path: Path) -> None:
    path = tmp_path / "v.yaml"
    path.write_text("scopeId: bot.other\n" + SUPPORT_YAML)
    refused = jnh("vocabulary", "declare", "--from-file", str(path), "--yes")
    assert refused.exit_code == 2 and "pass --scope bot.other" in refused.stderr
    jnh.ok("vocabulary", "declare", "--scope", "bot.other", "--from-file", str(path), "--yes")
    assert stored(jnh, "bot.other") is not None


@pytest.mark.parametrize("content", ["{}", "scopeId: bot.a\n", "vocabulary:\n",
                                     '{"vocabulary": []}'])  # fmt: skip
def test_a_file_without_a_vocabulary_is_never_read_as_empty(
    jnh: Jnh, tmp_path: Path, content: str
) -> None:
    path = tmp_path / "v.yaml"
    path.write_text(content)
    refused = jnh("vocabulary", "declare", "--scope", "bot.a", "--from-file", str(path), "--yes")
    assert refused.exit_code == 2 and "--none" in refused.stderr
    assert stored(jnh, "bot.a") is None


def test_an_empty_scope_is_sent_for_the_server_to_refuse(jnh: Jnh) -> None:
    refused = jnh("vocabulary", "get", "--scope", "")
    assert refused.exit_code == 3 and "scopeId" in refused.stderr


def test_declare_none_declares_an_empty_vocabulary(jnh: Jnh) -> None:
    jnh.ok(*DECLARE_DEFAULT)
    result = jnh("vocabulary", "declare", "--scope", "bot.support", "--none", "--yes")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (
        "LEVEL        scope bot.support\n"
        "DECLARATION  empty: classification is off at this level\n"
        "RESOLVES     nothing: classification is off\n"
    )
    assert "classification is OFF at this level" in result.stderr


# the changes, confirmation and --dry-run


def test_declare_prints_what_it_adds_drops_and_re_describes(jnh: Jnh, tmp_path: Path) -> None:
    jnh.ok(*DECLARE_DEFAULT)
    path = tmp_path / "v.yaml"
    path.write_text(SUPPORT_YAML)
    result = jnh("vocabulary", "declare", "--from-file", str(path), "--yes")
    assert result.exit_code == 0, result.stderr
    assert printed(result.stderr) == [
        "Now the enterprise level declares 2 entity classes and 1 relation type.",
        "The new one replaces it whole:",
        '  adds class Ticket: "a support case"',
        "  drops class Organization",
        '  re-describes class Person: "an individual human being, including colleagues" '
        '-> "a customer"',
        "  drops relation type WORKS_AT",
    ]


def test_describe_changes_tells_inheritance_emptiness_and_signatures_apart() -> None:
    old = {"entityClasses": [{"name": "A", "description": "a"}, {"name": "B"}],
           "relationTypes": [{"name": "R", "signatures": [{"sourceClass": "A",
                                                          "targetClass": "B"}]}]}  # fmt: skip
    new = {"entityClasses": [{"name": "A", "description": "a\n"}, {"name": "B"}],
           "relationTypes": [{"name": "R", "signatures": []}]}  # fmt: skip
    assert describe_changes(old, new, "bot.a").splitlines() == [
        "Now scope bot.a declares 2 entity classes and 1 relation type.",
        "The new one replaces it whole:",
        "  changes the signatures of relation type R: A:B -> none",
    ]  # a description differing only in line breaks is not re-described
    assert describe_changes(None, old, "bot.a").splitlines()[0] == (
        "Now scope bot.a declares no vocabulary: it inherits the enterprise default."
    )
    assert describe_changes(None, {}, None).splitlines() == [
        "Now the enterprise level declares no vocabulary.",
        "The new declaration:",
        "  declares no entity class and no relation type",
        "It declares no entity classes: classification is OFF at this level.",
    ]
    emptied = describe_changes({"entityClasses": []}, old, None).splitlines()
    assert emptied[0] == (
        "Now the enterprise level declares an empty vocabulary: classification is off there."
    )
    assert '  adds relation type R (A:B): ""' in emptied
    assert describe_changes(old, old, None).splitlines()[2] == (
        "  changes no entity class and no relation type"
    )


def test_dry_run_prints_the_changes_and_the_request_and_sends_nothing(jnh: Jnh) -> None:
    counting = Counting(jnh.transport)
    jnh.transport = counting  # type: ignore[assignment]
    result = jnh("vocabulary", "declare", "--scope", "bot.support", "--class", "Ticket=a case",
                 "--dry-run")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert counting.requests == ["GET /v1/memory/vocabulary"]
    request_line, body = result.stdout.split("\n", 1)
    assert request_line == "PUT /v1/memory/vocabulary"
    assert json.loads(body) == {
        "scopeId": "bot.support",
        "vocabulary": {"entityClasses": [{"name": "Ticket", "description": "a case"}],
                       "relationTypes": []},
    }  # fmt: skip
    assert '  adds class Ticket: "a case"' in result.stderr
    assert stored(jnh, "bot.support") is None


def test_without_a_terminal_declare_and_remove_need_yes(jnh: Jnh) -> None:
    counting = Counting(jnh.transport)
    jnh.transport = counting  # type: ignore[assignment]
    for args in (("declare", "--class", "A="), ("remove",)):
        refused = jnh("vocabulary", *args)
        assert refused.exit_code == 2 and "pass --yes" in refused.stderr
    assert counting.requests == []


def test_on_a_terminal_declare_asks_first(jnh: Jnh, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vocabulary_commands, "stdin_is_interactive", lambda: True)
    declined = jnh("vocabulary", "declare", "--class", "A=", stdin="n\n")
    assert declined.exit_code == 1 and "Declare it at the enterprise level?" in declined.stderr
    assert stored(jnh, None) is None
    accepted = jnh("vocabulary", "declare", "--class", "A=", stdin="y\n")
    assert accepted.exit_code == 0 and stored(jnh, None) is not None
    kept = jnh("vocabulary", "remove", stdin="n\n")
    assert kept.exit_code == 1 and stored(jnh, None) is not None
    assert jnh("vocabulary", "remove", stdin="y\n").exit_code == 0
    assert stored(jnh, None) is None


# get


def test_get_tells_the_three_states_apart(jnh: Jnh) -> None:
    assert jnh.ok("vocabulary", "get") == (
        "LEVEL        enterprise\n"
        "DECLARATION  none: the enterprise declares no default\n"
        "RESOLVES     nothing: classification is off\n"
    )
    jnh.ok(*DECLARE_DEFAULT)
    inherits = jnh.ok("vocabulary", "get", "--scope", "bot.support")
    assert inherits.splitlines()[:3] == [
        "LEVEL        scope bot.support",
        "DECLARATION  none: this scope inherits the enterprise default",
        "RESOLVES     the enterprise default",
    ]
    assert "Person        an individual human being, including colleagues" in inherits
    jnh.ok("vocabulary", "declare", "--scope", "bot.support", "--none", "--yes")
    assert jnh.ok("vocab", "get", "--scope", "bot.support").splitlines() == [
        "LEVEL        scope bot.support",
        "DECLARATION  empty: classification is off at this level",
        "RESOLVES     nothing: classification is off",
    ]


def test_get_json_is_the_response_verbatim_and_name_lists_resolved_classes(jnh: Jnh) -> None:
    jnh.ok(*DECLARE_DEFAULT)
    answer = jnh.json("vocabulary", "get", "--scope", "bot.support")
    assert answer == jnh.api.get("/v1/memory/vocabulary", scopeId="bot.support").get_json()
    assert "declaration" not in answer
    assert jnh.ok("vocabulary", "get", "--scope", "bot.support", "-o", "name") == (
        "Person\nOrganization\n"
    )
    jnh.ok("vocabulary", "declare", "--scope", "bot.support", "--none", "--yes")
    assert jnh.ok("vocabulary", "get", "--scope", "bot.support", "-o", "name") == ""
    assert (
        jnh.json("vocabulary", "get", "--scope", "bot.support")["declaration"]["entityClasses"]
        == []
    )


# remove


def test_remove_restores_inheritance_and_reports_not_found(jnh: Jnh) -> None:
    jnh.ok(*DECLARE_DEFAULT)
    jnh.ok("vocabulary", "declare", "--scope", "bot.support", "--none", "--yes")
    removed = jnh.ok("vocabulary", "remove", "--scope", "bot.support", "--yes")
    assert removed == (
        "Removed the vocabulary declared at scope bot.support (it inherits the enterprise "
        "default again).\n"
    )
    assert "the enterprise default" in jnh.ok("vocabulary", "get", "--scope", "bot.support")
    again = jnh("vocabulary", "remove", "--scope", "bot.support", "--yes")
    assert again.exit_code == 4
    assert "no vocabulary is declared at scope 'bot.support'" in again.stderr
    assert jnh.json("vocabulary", "remove", "--yes") == {}


# an API key: refused locally for management, reading works


def test_an_api_key_is_refused_locally_before_any_request(jnh: Jnh) -> None:
    root_key = jnh.json("keys", "create", "--role", "root")["keyString"]
    counting = Counting(jnh.transport)
    jnh.transport = counting  # type: ignore[assignment]
    for args in (("declare", "--class", "A=", "--yes"), ("declare", "--none", "--dry-run"),
                 ("remove", "--scope", "bot.a", "--yes")):  # fmt: skip
        refused = jnh("vocabulary", *args, "--token", root_key)
        assert refused.exit_code == 5, refused.stderr
        assert "can never be used with an API key" in refused.stderr
        assert "jnh sent nothing" in refused.stderr
    by_environment = jnh("vocabulary", "remove", "--yes", JENNAH_TOKEN=root_key)
    assert by_environment.exit_code == 5
    assert counting.requests == []


def test_reading_works_with_a_key_holding_read(jnh: Jnh) -> None:
    jnh.ok(*DECLARE_DEFAULT)
    member_key = jnh.json("keys", "create", "--role", "member")["keyString"]
    answer = jnh.json("vocabulary", "get", "--token", member_key)
    assert [c["name"] for c in answer["resolved"]["entityClasses"]] == ["Person", "Organization"]


def test_help_has_examples() -> None:
    from click.testing import CliRunner

    from jennah.cli.main import cli

    for args in ((), ("declare",), ("get",), ("remove",)):
        result = CliRunner().invoke(cli, ["vocab", *args, "--help"])
        assert result.exit_code == 0 and "Example" in result.stdout
    listing = CliRunner().invoke(cli, ["--help"]).stdout
    assert re.search(r"vocabulary +Memory vocabulary \(alias vocab\)", listing), listing
