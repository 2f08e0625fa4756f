"""End to end: the brief from a real `jnh serve` on SQLite, through `jnh` and plain HTTP:
the 200 with its ETag, the 304 with no body, a change of memory changing both."""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.conftest import Server

pytestmark = pytest.mark.slow

SEED = """\
chunks:
  - text: Carol drinks green tea every morning
  - text: The team standup is at nine
"""


def test_the_brief_over_http_and_jnh(server: Server) -> None:
    server.json("scopes", "memory", "commit", "briefed", "--from-file",
                server.file("brief-seed.yaml", SEED))  # fmt: skip
    printed = server.ok("scopes", "memory", "brief", "briefed")
    assert printed.startswith('<memory-brief scope="briefed" variant="full">\n')
    assert "- fact: 2\n" in printed and printed.endswith("</memory-brief>\n")
    token = server.ok("auth", "print-token").strip()
    url = f"{server.endpoint}/v1/scopes/briefed/memory/brief"
    auth = {"Authorization": f"Bearer {token}"}
    first = httpx.get(url, headers=auth, timeout=30)
    assert first.status_code == 200 and first.json()["brief"] == printed
    assert first.json()["tokenCount"] <= 2000
    etag = first.headers["ETag"]
    unchanged = httpx.get(url, headers=auth | {"If-None-Match": etag}, timeout=30)
    assert unchanged.status_code == 304 and unchanged.content == b""
    assert unchanged.headers["ETag"] == etag
    more = server.file("brief-more.yaml", "chunks:\n  - text: Dave bikes to work\n")
    server.json("scopes", "memory", "commit", "briefed", "--from-file", more)
    changed = httpx.get(url, headers=auth | {"If-None-Match": etag}, timeout=30)
    assert changed.status_code == 200 and "- fact: 3\n" in changed.json()["brief"]
    assert changed.headers["ETag"] != etag
    shared = httpx.get(url, headers=auth, params={"variant": "shared"}, timeout=30)
    assert "Last conversation" not in shared.json()["brief"]
