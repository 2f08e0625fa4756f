"""End to end: a real `jnh serve` process on SQLite, driven by real `jnh` processes and httpx.

The hashing embedder keeps it fast; everything else (store, HTTP server,
credentials, CLI) is what a user runs.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import Server, free_port

pytestmark = pytest.mark.slow

SEED = """\
chunks:
  - text: Alice works at Acme as an engineer
    metadata: {team: eng, source: hr}
    validAt: 2024-01-01T00:00:00Z
  - text: Bob works at Acme in sales
    metadata: {team: sales}
  - text: Carol drinks green tea every morning
nodes:
  - {nodeId: alice, label: Alice, nodeType: Person}
  - {nodeId: bob, label: Bob, nodeType: Person}
  - {nodeId: acme, label: Acme Corp}
edges:
  - {source: alice, relation: WORKS_AT, target: acme, validAt: 2024-01-01T00:00:00Z}
  - {source: bob, relation: WORKS_AT, target: acme}
"""


@pytest.fixture(scope="module")
def seeded(server: Server) -> dict[str, Any]:
    seed = server.file("seed.yaml", SEED)
    body: dict[str, Any] = server.json("scopes", "memory", "commit", "team", "--from-file", seed)
    return body


def test_print_token_prints_the_credentials_files_token(server: Server) -> None:
    token = server.ok("auth", "print-token").strip()
    path = server.data_dir / "credentials.json"
    assert json.loads(path.read_text()) == {
        "enterprise_id": "local", "principal": "user:root", "token": token,
    }  # fmt: skip
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert token.startswith("ju_")
    assert any("user:root of enterprise 'local': created now" in x for x in server.banner)


def test_the_banner_names_the_formation_model(server: Server) -> None:
    assert "  model      rules (offline, deterministic)" in server.banner  # pinned by `serving`


def test_commit_from_a_yaml_file(seeded: dict[str, Any]) -> None:
    assert seeded["chunksWritten"] == "3"
    assert seeded["nodesWritten"] == "3"
    assert seeded["edgesWritten"] == "2"
    assert seeded["commitTimestamp"].endswith("Z")
    assert len(seeded["chunkIds"]) == 3 and len(seeded["edgeIds"]) == 2


def test_query_by_text(server: Server, seeded: dict[str, Any]) -> None:
    body = server.json("scopes", "memory", "query", "team", "--text", "green tea", "--top-k", "1")
    (best,) = body["semantic"]["results"]
    assert best["text"] == "Carol drinks green tea every morning"
    missing = server.jnh("agents", "memory", "query", "team", "--text", "green tea")
    assert missing.returncode == 4  # a subject scope is no agent workspace
    assert "agent workspace 'team' was not found" in missing.stderr


def test_query_by_filter(server: Server, seeded: dict[str, Any]) -> None:
    body = server.json("scopes", "memory", "query", "team", "--text", "works at Acme",
                       "--filter", "team=sales")  # fmt: skip
    assert [r["text"] for r in body["semantic"]["results"]] == ["Bob works at Acme in sales"]
    names = server.ok("scopes", "memory", "query", "team", "--text", "Acme",
                      "--filter", "team:in=eng,sales", "-o", "name").split()  # fmt: skip
    assert sorted(names) == sorted(seeded["chunkIds"][:2])


def test_as_of_valid_after_a_supersession(server: Server) -> None:
    first = server.json("scopes", "memory", "commit", "moves", "-f", "-",
                        stdin='{"chunks": [{"text": "Dana lives in Lisbon", '
                              '"validAt": "2023-01-01T00:00:00Z"}]}')  # fmt: skip
    old = first["chunkIds"][0]
    change = server.file("move.yaml", f"""\
supersessions:
  - chunkId: {old}
    replacementChunk:
      text: Dana lives in Tokyo
      validAt: 2025-03-01T00:00:00Z
""")  # fmt: skip
    moved = server.json("scopes", "memory", "commit", "moves", "-f", change)
    assert moved["chunkSupersessions"] == "1"
    now = server.json("scopes", "memory", "query", "moves", "--text", "where does Dana live")
    assert [r["text"] for r in now["semantic"]["results"]] == ["Dana lives in Tokyo"]
    then = server.json("scopes", "memory", "query", "moves", "--text", "where does Dana live",
                       "--as-of-valid", "2024-06-01T00:00:00Z")  # fmt: skip
    (past,) = then["semantic"]["results"]
    assert past["text"] == "Dana lives in Lisbon"
    assert past["invalidAt"] == "2025-03-01T00:00:00Z"
    assert past["supersededBy"] == moved["chunkIds"][0]
    history = server.json("scopes", "memory", "inspect", "moves", "--all-history")
    assert len(history["chunks"]) == 2


def test_graph_query_with_graph_json(server: Server, seeded: dict[str, Any]) -> None:
    graph = server.file("people.json", json.dumps({
        "start": {"filters": [{"key": "NodeType", "value": "Person"}]},
        "traversal": {"relations": ["WORKS_AT"], "direction": "DIRECTION_OUTBOUND", "depth": 1},
    }))  # fmt: skip
    body = server.json("scopes", "memory", "query", "team", "--graph-json", graph)
    nodes = {n["nodeId"]: n for n in body["graph"]["nodes"]}
    assert {k: n["depth"] for k, n in nodes.items()} == {"alice": 0, "bob": 0, "acme": 1}
    assert nodes["alice"]["nodeType"] == "Person"
    assert "nodeType" not in nodes["acme"]
    assert len(body["graph"]["edges"]) == 2


def test_inspect_graph_with_and_without_the_class_column(
    server: Server, seeded: dict[str, Any]
) -> None:
    classed = server.ok("scopes", "memory", "inspect", "team", "--graph")
    assert "NODE_ID  LABEL      CLASS" in classed
    server.ok("scopes", "memory", "commit", "places", "-f", "-",
              stdin='{"nodes": [{"nodeId": "lisbon", "label": "Lisbon"}]}')  # fmt: skip
    plain = server.ok("scopes", "memory", "inspect", "places", "--graph")
    assert "CLASS" not in plain and "lisbon" in plain
    forced = server.ok("scopes", "memory", "inspect", "places", "--graph", "--fields",
                       "label,nodeType")  # fmt: skip
    assert "NODE_ID  LABEL   CLASS" in forced


def test_a_plain_http_client_with_the_printed_token(server: Server, seeded: dict[str, Any]) -> None:
    token = server.ok("auth", "print-token").strip()
    response = httpx.post(
        f"{server.endpoint}/v1/scopes/team/memory:query",
        headers={"Authorization": f"Bearer {token}"},
        json={"semantic": {"queryText": "engineer", "topK": 1,
                           "filters": [{"key": "source", "value": "hr",
                                        "operator": "OPERATOR_EQUALS"}]}},
        timeout=30,
    )  # fmt: skip
    assert response.status_code == 200
    assert response.json()["semantic"]["results"][0]["metadata"]["source"] == "hr"
    refused = httpx.post(f"{server.endpoint}/v1/scopes/team/memory:query", json={}, timeout=30)
    assert refused.status_code == 401
    assert refused.json()["error"]["status"] == "UNAUTHENTICATED"
    spec = httpx.get(f"{server.endpoint}/openapi.json", timeout=30)
    committed = Path(__file__).parents[2] / "shared" / "jennah" / "api" / "openapi.json"
    assert spec.json() == json.loads(committed.read_text())


def test_exit_codes(server: Server) -> None:
    bad = server.jnh("scopes", "memory", "commit", "team", "-f", "-", stdin='{"chunks": [{}]}')
    assert bad.returncode == 3 and "INVALID_ARGUMENT" in bad.stderr
    missing = server.jnh("scopes", "memory", "commit", "team", "-f", "-",
                         stdin='{"supersessions": [{"chunkId": "chk_nope", '
                               '"replacementChunk": {"text": "x"}}]}')  # fmt: skip
    assert missing.returncode == 4 and "chk_nope" in missing.stderr
    unauthenticated = server.jnh("scopes", "memory", "inspect", "team", "--token", "wrong")
    assert unauthenticated.returncode == 5
    usage = server.jnh("scopes", "memory", "query", "team")
    assert usage.returncode == 2
    nowhere = server.jnh("scopes", "memory", "inspect", "team", "--endpoint",
                         f"http://127.0.0.1:{free_port()}")  # fmt: skip
    assert nowhere.returncode == 10 and "cannot connect" in nowhere.stderr
