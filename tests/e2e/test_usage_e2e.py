"""Usage and billing end to end: a real `jnh serve` (SQLite, hashing embedder, the rules
model) driven by real `jnh` processes: form twice, read the billing state and the token
report, change the overage multiple, and run the rollup beside the running server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import Server

pytestmark = pytest.mark.slow

TURNS = [
    {"turns": [{"role": "TURN_ROLE_USER", "content": "I live in Tokyo and I work at Alphaus."}]},
    {"turns": [{"role": "TURN_ROLE_USER", "content": "I prefer dark mode in every tool."}]},
]


@pytest.fixture(scope="module")
def receipts(server: Server) -> list[dict[str, Any]]:
    formed = []
    for n, body in enumerate(TURNS):
        path = server.file(f"turns-{n}.json", json.dumps(body))
        formed.append(server.json("agents", "memory", "form", "support-bot", "-f", path))
    return formed


def test_the_report_adds_up_to_the_receipts(server: Server, receipts: list[dict[str, Any]]) -> None:
    report = server.json("usage", "tokens", "--by", "caller")
    assert {b["key"] for b in report["buckets"]} == {"user:root"}
    for field in ("units", "inputTokens", "outputTokens"):
        receipt_field = "formationUnits" if field == "units" else field
        assert sum(int(b[field]) for b in report["buckets"]) == sum(
            int(r[receipt_field]) for r in receipts
        )
    table = server.ok("usage", "tokens").splitlines()
    assert table[0].split() == ["START", "INPUT_TOKENS", "OUTPUT_TOKENS", "UNITS"]
    assert table[-1].split()[0] == "TOTAL"


def test_the_billing_state_counts_the_units(server: Server, receipts: list[dict[str, Any]]) -> None:
    state = server.json("billing", "get")
    assert state["plan"] == "ENTERPRISE"  # the local enterprise's plan
    assert int(state["unitsUsed"]) == sum(int(r["formationUnits"]) for r in receipts)
    changed = server.json("billing", "overage", "set-multiple", "3")
    assert changed["overageMultiple"] == 3.0 and changed["overageBand"] == "0"  # no overage
    refused = server.jnh("billing", "overage", "set-multiple", "3.25")
    assert refused.returncode == 2 and "steps of 0.5" in refused.stderr


def test_the_rollup_runs_beside_the_server(server: Server, receipts: list[dict[str, Any]]) -> None:
    before = server.json("usage", "tokens")
    done = server.ok("usage", "rollup", "--data-dir", str(server.data_dir))
    assert done.startswith("Folded ") and "watermark" in done
    again = server.ok("usage", "rollup", "--data-dir", str(server.data_dir))
    assert again.startswith("Folded 0 usage rows")
    after = server.json("usage", "tokens")

    def counts(report: dict[str, Any]) -> list[tuple[str, str, str, str]]:
        return [(b["startTime"], b["inputTokens"], b["outputTokens"], b["units"])
                for b in report["buckets"]]  # fmt: skip

    assert counts(after) == counts(before)  # the last bucket ends now: its end moved
