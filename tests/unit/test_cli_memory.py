"""`jnh … memory commit|query|inspect` against the in-process API, over HTTP (WSGI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from jennah.auth import LocalCredentials, credentials_path
from jennah.cli.main import cli
from jennah.cli.memory import query_body
from jennah.cli.options import CliState
from tests.unit.fakes import TOKEN, Api

SEED_YAML = """\
chunks:
  - text: Alice works at Acme as an engineer
    metadata: {team: eng}
    validAt: 2024-01-01T00:00:00Z
  - text: Bob works at Acme in sales
    metadata: {team: sales}
nodes:
  - {nodeId: alice, label: Alice, nodeType: Person}
  - {nodeId: acme, label: Acme}
edges:
  - {source: alice, relation: WORKS_AT, target: acme}
"""


class Jnh:
    """Runs `jnh` in-process; its HTTP calls reach the Flask app through WSGI."""

    def __init__(self, api: Api, data_dir: Path) -> None:
        self.api = api
        self.data_dir = data_dir
        self.transport = httpx.WSGITransport(app=api.app)

    def __call__(self, *args: str, stdin: str | None = None, **env: str) -> Result:
        environment = {
            "JENNAH_DATA_DIR": str(self.data_dir),
            "JENNAH_TOKEN": "",
            "XDG_CONFIG_HOME": str(self.data_dir.parent / "config"),  # `jnh auth login`'s
        } | env
        return CliRunner().invoke(cli, list(args), input=stdin, env=environment,
                                  obj=CliState(transport=self.transport))  # fmt: skip

    def ok(self, *args: str, stdin: str | None = None) -> str:
        result = self(*args, stdin=stdin)
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return result.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "-o", "json"))


@pytest.fixture
def jnh(tmp_path: Path) -> Jnh:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    credentials_path(data_dir).write_text(LocalCredentials(token=TOKEN).model_dump_json())
    return Jnh(Api.create(tmp_path), data_dir)


@pytest.fixture
def seeded(jnh: Jnh, tmp_path: Path) -> Jnh:
    seed = tmp_path / "seed.yaml"
    seed.write_text(SEED_YAML)
    jnh.ok("agents", "memory", "commit", "bot", "--from-file", str(seed))  # an agent workspace
    return jnh


def test_commit_from_yaml_keeps_timestamps_as_strings(jnh: Jnh, tmp_path: Path) -> None:
    seed = tmp_path / "seed.yaml"
    seed.write_text(SEED_YAML)
    body = jnh.json("scopes", "memory", "commit", "bot", "--from-file", str(seed))
    assert body["chunksWritten"] == "2" and body["edgesWritten"] == "1"
    plan = next(p for p in reversed(jnh.api.store.plans) if p.chunks)  # not the pass's
    assert plan.chunks[0].valid_at is not None and plan.chunks[0].valid_at.year == 2024


def test_commit_from_stdin_json_prints_ids_with_name_output(jnh: Jnh) -> None:
    out = jnh.ok("agents", "memory", "commit", "bot", "--from-file", "-", "-o", "name",
                 stdin='{"chunks": [{"text": "x"}, {"text": "y"}]}')  # fmt: skip
    ids = out.split()
    assert len(ids) == 2 and all(i.startswith("chk_") for i in ids)


def test_commit_table_output_lists_counts_and_ids(jnh: Jnh) -> None:
    out = jnh.ok(
        "scopes", "memory", "commit", "bot", "-f", "-", stdin='{"chunks": [{"text": "x"}]}'
    )
    assert "CHUNKS_WRITTEN" in out and "COMMIT_TIMESTAMP" in out and "chk_" in out


def test_query_by_text_uses_the_local_token_automatically(seeded: Jnh) -> None:
    out = seeded.ok("scopes", "memory", "query", "bot", "--text", "Alice engineer", "--top-k", "1")
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "SCORE", "VALID_AT", "INVALID_AT", "TEXT"]
    assert "Alice works at Acme" in lines[1]


def test_query_by_filter(seeded: Jnh) -> None:
    body = seeded.json("agents", "memory", "query", "bot", "--text", "works",
                       "--filter", "team=sales")  # fmt: skip
    assert [r["text"] for r in body["semantic"]["results"]] == ["Bob works at Acme in sales"]
    body = seeded.json("agents", "memory", "query", "bot", "--text", "works",
                       "--filter", "team!=sales")  # fmt: skip
    assert [r["text"] for r in body["semantic"]["results"]] == [
        "Alice works at Acme as an engineer"
    ]
    body = seeded.json("agents", "memory", "query", "bot", "--text", "works",
                       "--filter", "team:in=sales,eng")  # fmt: skip
    assert len(body["semantic"]["results"]) == 2


def test_query_as_of_valid_reaches_both_sections(seeded: Jnh) -> None:
    body = seeded.json("scopes", "memory", "query", "bot", "--text", "works", "--as-of-valid",
                       "2023-06-01T00:00:00Z", "--graph-json", '{"start": {}}')  # fmt: skip
    assert [r["text"] for r in body["semantic"]["results"]] == ["Bob works at Acme in sales"]
    assert {n["nodeId"] for n in body["graph"]["nodes"]} == {"alice", "acme"}
    sent = query_body("t", None, (), "2023-06-01", '{"start": {}}')
    assert sent["graph"]["asOfValid"] == sent["semantic"]["asOfValid"]
    own = query_body(None, None, (), "2023-06-01", '{"asOfValid": "2020-01-01T00:00:00Z"}')
    assert own == {"graph": {"asOfValid": "2020-01-01T00:00:00Z"}}


def test_a_whole_query_body_is_accepted_as_graph_json() -> None:
    body = query_body(None, None, (), None, '{"graph": {"limit": 5}}')
    assert body == {"graph": {"limit": 5}}


def test_query_graph_json_from_a_file_with_class_column(seeded: Jnh, tmp_path: Path) -> None:
    graph = tmp_path / "graph.json"
    graph.write_text(json.dumps({"start": {"filters": [{"key": "NodeType", "value": "Person"}]},
                                 "traversal": {"relations": ["WORKS_AT"]}}))  # fmt: skip
    out = seeded.ok("scopes", "memory", "query", "bot", "--graph-json", str(graph))
    assert "NODE_ID  LABEL  CLASS   DEPTH" in out
    assert "WORKS_AT" in out
    names = seeded.ok("scopes", "memory", "query", "bot", "--graph-json", str(graph), "-o", "name")
    assert names.split()[:2] == ["alice", "acme"]


def test_query_mode_picks_the_search(seeded: Jnh) -> None:
    body = seeded.json("agents", "memory", "query", "bot", "--text", "sales", "--mode", "lexical")
    assert [r["text"] for r in body["semantic"]["results"]] == ["Bob works at Acme in sales"]
    sent = query_body("sales", None, (), None, None, "semantic")
    assert sent == {"semantic": {"queryText": "sales", "mode": "SEMANTIC"}}
    assert "mode" not in query_body("sales", None, (), None, None)["semantic"]
    result = seeded("agents", "memory", "query", "bot", "--mode", "lexical")
    assert result.exit_code == 2 and "--mode" in result.stderr
    result = seeded("agents", "memory", "query", "bot", "--text", "x", "--mode", "fuzzy")
    assert result.exit_code == 2


def test_query_needs_text_or_graph(jnh: Jnh) -> None:
    result = jnh("scopes", "memory", "query", "bot")
    assert result.exit_code == 2
    assert "--text" in result.stderr


@pytest.mark.parametrize("bad", ["nokey", "=v", "a:out=1"])
def test_a_malformed_filter_is_a_usage_error(jnh: Jnh, bad: str) -> None:
    result = jnh("scopes", "memory", "query", "bot", "--text", "x", "--filter", bad)
    assert result.exit_code == 2


def test_inspect_shows_class_only_when_a_node_has_one(jnh: Jnh) -> None:
    jnh.ok("scopes", "memory", "commit", "plain", "-f", "-",
           stdin='{"nodes": [{"nodeId": "acme", "label": "Acme"}]}')  # fmt: skip
    out = jnh.ok("scopes", "memory", "inspect", "plain", "--graph")
    assert "CLASS" not in out and "NODE_ID  LABEL" in out
    forced = jnh.ok("scopes", "memory", "inspect", "plain", "--graph", "--fields", "nodeType")
    assert "NODE_ID  CLASS" in forced
    ann = '{"nodes": [{"nodeId": "ann", "label": "Ann", "nodeType": "Person"}]}'
    jnh.ok("scopes", "memory", "commit", "plain", "-f", "-", stdin=ann)
    classed = jnh.ok("scopes", "memory", "inspect", "plain", "--graph")
    assert "NODE_ID  LABEL  CLASS" in classed
    acme_row = next(line for line in classed.splitlines() if line.startswith("acme"))
    assert acme_row.split() == ["acme", "Acme", "-"]  # no placeholder class


def test_inspect_lists_chunks_and_json_is_verbatim(seeded: Jnh) -> None:
    out = seeded.ok("scopes", "memory", "inspect", "bot")
    assert out.splitlines()[0].split() == ["ID", "VALID_AT", "INVALID_AT", "TEXT"]
    body = seeded.json("scopes", "memory", "inspect", "bot", "--graph")
    response = seeded.api.get("/v1/scopes/bot/memory:inspect", graph="true").get_json()
    body.pop("asOfValid"), response.pop("asOfValid")
    assert body == response


def test_inspect_pages_and_hints_the_next_token(seeded: Jnh) -> None:
    result = seeded("scopes", "memory", "inspect", "bot", "--page-size", "1")
    assert result.exit_code == 0
    assert "--page-token" in result.stderr


def test_unknown_fields_are_a_usage_error(seeded: Jnh) -> None:
    result = seeded("scopes", "memory", "inspect", "bot", "--fields", "colour")
    assert result.exit_code == 2 and "colour" in result.stderr


@pytest.mark.parametrize(
    ("stdin", "code", "status"),
    [
        ('{"chunks": [{"txt": "x"}]}', 3, "INVALID_ARGUMENT"),
        ('{"supersessions": [{"chunkId": "chk_x", "replacementChunk": {"text": "y"}}]}', 4,
         "NOT_FOUND"),
    ],
)  # fmt: skip
def test_api_errors_print_the_message_and_exit_with_the_documented_code(
    jnh: Jnh, stdin: str, code: int, status: str
) -> None:
    result = jnh("scopes", "memory", "commit", "bot", "-f", "-", stdin=stdin)
    assert result.exit_code == code
    assert result.stderr.splitlines()[-1].startswith(f"jnh: {status}: ")
    assert result.stdout == ""


def test_a_bad_token_exits_5(jnh: Jnh) -> None:
    result = jnh("scopes", "memory", "inspect", "bot", "--token", "wrong")
    assert result.exit_code == 5
    assert "UNAUTHENTICATED" in result.stderr


def test_no_server_exits_10(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["scopes", "memory", "inspect", "bot", "--endpoint", "http://127.0.0.1:9"],
        env={"JENNAH_DATA_DIR": str(tmp_path)},
    )  # fmt: skip
    assert result.exit_code == 10
    assert "cannot connect" in result.stderr


def test_an_unreadable_file_is_a_usage_error(jnh: Jnh, tmp_path: Path) -> None:
    result = jnh("scopes", "memory", "commit", "bot", "-f", str(tmp_path / "missing.yaml"))
    assert result.exit_code == 2
    result = jnh("scopes", "memory", "commit", "bot", "-f", "-", stdin="- a list\n- not a map\n")
    assert result.exit_code == 2
