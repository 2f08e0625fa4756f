"""End to end on SQLite: claims through a real `jnh serve` and real `jnh` processes.

memory:commit takes the claim fields and memory:query / memory:inspect give them back;
dormant and retracted claims stay out of default reads; a scope's time zone is set on
create and by `jnh scopes update`, and survives a restart; a formed claim's evidence is
read back with `jnh agents memory evidence`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Server, serving

pytestmark = pytest.mark.slow

CLAIMS = """\
chunks:
  - text: Always show the draft before anything goes to the soccer team chat
    validAt: 2024-01-01T00:00:00Z
    type: directive
    about: Soccer team group chat
    summary: Ask before sending anything to the soccer team group chat.
    whenToUse: Any request to message the soccer group chat
    appliesTo: [ent.soccer]
    strength: hard
    pin: true
    authority: user_explicit
    confidence: 0.9
    durability: seasonal
    validUntil: 2099-06-30T22:00:00Z
    sensitivity: minors
    related: [chk_0123]
    needsEnrichment: true
    extensions: {color: '"blue"'}
  - text: Pizza night at the soccer club
    status: dormant
  - text: The soccer coach is called Rui
    status: retracted
"""
GIVEN = {
    "type": "directive", "about": "Soccer team group chat",
    "summary": "Ask before sending anything to the soccer team group chat.",
    "whenToUse": "Any request to message the soccer group chat", "appliesTo": ["ent.soccer"],
    "strength": "hard", "pin": True, "authority": "user_explicit", "confidence": 0.9,
    "durability": "seasonal", "validUntil": "2099-06-30T22:00:00Z", "status": "active",
    "sensitivity": "minors", "related": ["chk_0123"], "needsEnrichment": True,
    "extensions": {"color": '"blue"'}, "revision": 1, "reinforcementCount": 0,
}  # fmt: skip


def test_claim_fields_round_trip_and_hidden_claims_stay_out(server: Server) -> None:
    seed = server.file("claims.yaml", CLAIMS)
    written = server.json("scopes", "memory", "commit", "family", "--from-file", seed)
    assert len(written["chunkIds"]) == 3
    query = server.json("scopes", "memory", "query", "family", "--text", "soccer")
    results = query["semantic"]["results"]
    assert [r["text"] for r in results] == [
        "Always show the draft before anything goes to the soccer team chat"
    ]
    (result,) = results
    assert {k: result[k] for k in GIVEN} == GIVEN
    assert result["formedAt"] == result["createdAt"]
    listed = server.json("scopes", "memory", "inspect", "family")["chunks"]
    assert [{k: c[k] for k in GIVEN} for c in listed] == [GIVEN]
    history = server.json("scopes", "memory", "inspect", "family", "--all-history")["chunks"]
    assert sorted(c["status"] for c in history) == ["active", "dormant", "retracted"]
    again = server.json("scopes", "memory", "commit", "family", "--from-file", seed)
    assert again["chunkIds"] == written["chunkIds"]  # create-or-replace on text + validAt
    replaced = server.json("scopes", "memory", "inspect", "family", "--all-history")["chunks"]
    assert sorted((c["status"], c["revision"]) for c in replaced) == [
        ("active", 2), ("dormant", 2), ("retracted", 2),
    ]  # fmt: skip


def test_a_bad_claim_field_exits_3_naming_it(server: Server) -> None:
    body = json.dumps({"chunks": [{"text": "x", "type": "opinion"}]})
    done = server.jnh("scopes", "memory", "commit", "family2", "--from-file", "-", stdin=body)
    assert done.returncode == 3
    assert "chunks[0].type" in done.stderr and "'relationship'" in done.stderr


def test_a_scope_time_zone_is_set_updated_and_kept_across_a_restart(tmp_path: Path) -> None:
    with serving(tmp_path) as server:
        created = server.json("scopes", "create", "ana", "--time-zone", "Europe/Lisbon")
        assert created["timeZone"] == "Europe/Lisbon"
        server.ok("scopes", "create", "bot", "--kind", "agent")
        updated = server.json("scopes", "update", "bot", "--time-zone", "America/Los_Angeles")
        assert updated["timeZone"] == "America/Los_Angeles"
    with serving(tmp_path, data_dir=tmp_path / "data") as again:
        zones = {s["scopeId"]: s["timeZone"] for s in again.json("scopes", "list")["scopes"]}
        assert zones == {"ana": "Europe/Lisbon", "bot": "America/Los_Angeles"}
        (agent,) = again.json("agents", "list")["agents"]
        assert agent["timeZone"] == "America/Los_Angeles"
        refused = again.jnh("scopes", "update", "ana", "--time-zone", "Nowhere/Else")
        assert refused.returncode == 3 and "timeZone" in refused.stderr


def test_a_formed_claims_evidence_is_read_back(server: Server) -> None:
    turns = {"turns": [{"role": "TURN_ROLE_USER", "content": "I live in Lisbon."}],
             "observedAt": "2024-01-01T00:00:00Z"}  # fmt: skip
    server.ok("agents", "memory", "form", "helper", "--from-file", "-", stdin=json.dumps(turns))
    chunks: list[dict[str, Any]] = server.json("agents", "memory", "inspect", "helper")["chunks"]
    (claim,) = chunks
    answer = server.json("agents", "memory", "evidence", "helper", claim["id"])
    (line,) = answer["evidence"]
    assert line["ref"].startswith("conv://helper/frm_") and line["ref"].endswith("#turn=0-0")
    assert line["quote"] and line["recordedAt"].endswith("Z")
    refs = server.ok("scopes", "memory", "evidence", "helper", claim["id"], "-o", "name")
    assert refs.split() == [line["ref"]]
    missing = server.jnh("agents", "memory", "evidence", "helper", "chk_missing")
    assert missing.returncode == 4 and "memory 'chk_missing' was not found" in missing.stderr
