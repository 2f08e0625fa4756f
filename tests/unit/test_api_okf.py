"""GET …/memory:export and POST …/memory:import over HTTP, on the fakes."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from jennah import bootstrap
from jennah.api import bodies
from jennah.domain import okf, okf_archive
from jennah.domain.models import BriefVariant, ScopeRef
from tests.unit.fakes import ENTERPRISE, TOKEN, Api, make_container
from tests.unit.test_api_functions import client

AUTH = {"Authorization": f"Bearer {TOKEN}"}
SEED = {
    "chunks": [{"text": "Alice works at Acme", "metadata": {"topic": "work"}},
               {"text": "Bob likes tea", "validAt": "2024-01-01T00:00:00Z"}],
    "nodes": [{"nodeId": "alice", "label": "Alice", "nodeType": "Person"}, {"nodeId": "acme"}],
    "edges": [{"source": "alice", "relation": "WORKS_AT", "target": "acme"}],
}  # fmt: skip
GOOD_CLAIM = b"---\ntype: fact\n---\nCarol plays chess.\n"


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return Api.create(tmp_path)


def export(api: Api, path: str) -> Any:
    return api.app.test_client().get(f"{path}/memory:export", headers=AUTH)


def send(api: Api, path: str, body: bytes, content_type: str = "application/gzip") -> Any:
    return api.app.test_client().post(
        f"{path}/memory:import", data=body, headers=AUTH, content_type=content_type
    )


def tar_of(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def member(name: str, data: bytes = GOOD_CLAIM, kind: bytes = tarfile.REGTYPE) -> Any:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
        info.linkname = "claims/c1.md"
    return info, (data if kind == tarfile.REGTYPE else None)


def test_export_answers_a_deterministic_tar_gz_that_imports_into_an_empty_scope(api: Api) -> None:
    assert api.post("/v1/agents/bot/memory:commit", SEED).status_code == 200
    first = export(api, "/v1/agents/bot")
    assert first.status_code == 200
    assert first.mimetype == "application/gzip"
    assert first.headers["Content-Disposition"] == 'attachment; filename="bot.okf.tar.gz"'
    assert export(api, "/v1/scopes/bot").data == first.data  # same memory, same bytes
    files = okf_archive.unpack(first.data)
    assert okf.INDEX_FILE in files and okf.NODES_FILE in files and okf.EDGES_FILE in files
    imported = send(api, "/v1/scopes/copy", first.data)
    assert imported.status_code == 200, imported.get_json()
    assert imported.get_json() == {
        "claimsImported": "2", "evidenceLinesImported": "0", "nodesImported": "2",
        "edgesImported": "1",
        "suppressionsImported": "0",
    }  # fmt: skip
    assert export(api, "/v1/scopes/copy").data == first.data
    query = {"semantic": {"queryText": "where does Alice work"}}
    original = api.post("/v1/agents/bot/memory:query", query).get_json()["semantic"]["results"]
    copied = api.post("/v1/scopes/copy/memory:query", query).get_json()["semantic"]["results"]
    assert [r.pop("createdAt") for r in copied] != [r.pop("createdAt") for r in original]
    assert copied == original  # the same answer (formedAt too), but the commit time of the rows


def test_a_bad_import_names_every_file_and_field_and_writes_nothing(api: Api) -> None:
    body = okf_archive.pack(
        {
            "claims/a.md": b"---\ntype: fact\nconfidence: 2\n---\nA\n",
            "claims/b.md": b"---\ntype: rumour\n---\nB\n",
            "claims/c.md": GOOD_CLAIM,
            "notes.txt": b"hello",
        }
    )
    before = api.store.snapshot()
    response = send(api, "/v1/scopes/fresh", body)
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    assert error["details"][0]["reason"] == "INVALID_OKF"
    violations = error["details"][1]["fieldViolations"]
    assert [v["field"] for v in violations] == [
        "claims/a.md: confidence",
        "claims/b.md: type",
        "notes.txt",
    ]
    assert "'rumour' is not one of identity" in violations[1]["description"]
    assert api.store.snapshot() == before


def test_an_import_into_a_scope_with_memory_is_refused(api: Api) -> None:
    api.post("/v1/agents/bot/memory:commit", SEED)
    before = api.store.snapshot()
    response = send(api, "/v1/agents/bot", okf_archive.pack({"claims/c1.md": GOOD_CLAIM}))
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert (error["status"], error["details"][0]["reason"]) == (
        "FAILED_PRECONDITION",
        "SCOPE_NOT_EMPTY",
    )
    assert api.store.snapshot() == before


def test_an_import_past_one_transactions_bound_is_refused(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(okf, "MAX_IMPORT_CLAIMS", 2)
    body = okf_archive.pack({f"claims/c{i}.md": GOOD_CLAIM for i in range(3)})
    response = send(api, "/v1/scopes/fresh", body)
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert error["details"][0]["reason"] == "IMPORT_TOO_LARGE"
    assert "at most 2" in error["message"]
    assert not api.store.snapshot()["chunks"]


@pytest.mark.parametrize(
    "body",
    [
        tar_of(member("../claims/c1.md")),
        tar_of(member("claims/../../etc/passwd")),
        tar_of(member("/claims/c1.md")),
        tar_of(member("claims/c1.md"), member("claims/c2.md", kind=tarfile.SYMTYPE)),
        tar_of(member("claims/c1.md"), member("claims/c2.md", kind=tarfile.LNKTYPE)),
        tar_of(member("claims/fifo", kind=tarfile.FIFOTYPE)),
        tar_of(member("claims/dev", kind=tarfile.CHRTYPE)),
        tar_of(member("claims/c1.md"), member("claims/c1.md")),
        tar_of(member("claims/big.md", b"x" * (okf_archive.MAX_MEMBER_BYTES + 1))),
        gzip.compress(b"not a tar at all" * 100),
        b"not even gzip",
    ],
    ids=[
        "dotdot",
        "inner-dotdot",
        "absolute",
        "symlink",
        "hardlink",
        "fifo",
        "device",
        "twice",
        "too-big",
        "not-tar",
        "not-gzip",
    ],
)
def test_unsafe_or_unreadable_archives_are_refused(api: Api, body: bytes) -> None:
    before = api.store.snapshot()
    response = send(api, "/v1/scopes/fresh", body)
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["error"]["details"][0]["reason"] == "INVALID_ARCHIVE"
    assert api.store.snapshot() == before


def test_an_archive_inflating_past_its_bound_is_refused(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(okf_archive, "MAX_UNPACKED_BYTES", 64 * 1024)
    body = tar_of(*(member(f"claims/c{i}.md", b"y" * 20_000) for i in range(5)))
    assert len(body) < 4 * 1024  # a small body...
    response = send(api, "/v1/scopes/fresh", body)
    assert response.status_code == 400  # ...refused while it inflates
    assert "inflates past" in response.get_json()["error"]["message"]


def test_a_tar_made_by_hand_with_directories_and_dot_slash_imports(api: Api) -> None:
    folder = tarfile.TarInfo("./claims")
    folder.type = tarfile.DIRTYPE
    body = tar_of((folder, None), member("./claims/c1.md"))
    response = send(api, "/v1/scopes/fresh", body)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["claimsImported"] == "1"


def test_the_body_must_be_gzip_and_bounded(api: Api) -> None:
    good = okf_archive.pack({"claims/c1.md": GOOD_CLAIM})
    wrong = send(api, "/v1/scopes/fresh", good, content_type="application/json")
    assert wrong.status_code == 415
    assert wrong.get_json()["error"]["details"][0]["reason"] == "UNSUPPORTED_MEDIA_TYPE"
    huge = send(api, "/v1/scopes/fresh", b"\0" * (bodies.MAX_BODY_BYTES + 1))
    assert huge.status_code == 413
    assert not api.store.snapshot()["chunks"]


def test_pack_is_deterministic_and_round_trips() -> None:
    files = {"index.md": b"# x\n", "claims/a.md": GOOD_CLAIM, "evidence/a.jsonl": b""}
    assert okf_archive.pack(files) == okf_archive.pack(dict(reversed(list(files.items()))))
    assert okf_archive.unpack(okf_archive.pack(files)) == files


def test_the_inspect_function_exports_and_the_commit_function_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    container = make_container(tmp_path)
    monkeypatch.setattr(bootstrap, "container", lambda: container)
    client("commit").post("/v1/agents/bot/memory:commit", json=SEED, headers=AUTH)
    exported = client("inspect").get("/v1/agents/bot/memory:export", headers=AUTH)
    assert exported.status_code == 200
    imported = client("commit").post(
        "/v1/scopes/copy/memory:import", data=exported.data, headers=AUTH,
        content_type="application/gzip",
    )  # fmt: skip
    assert imported.status_code == 200, imported.get_json()
    assert client("query").get("/v1/agents/bot/memory:export", headers=AUTH).status_code == 404


def test_an_import_is_followed_by_the_lifecycle_pass(api: Api) -> None:
    """The imported scope has its brief at once: the pass after a change compiled it."""
    assert api.post("/v1/agents/bot/memory:commit", SEED).status_code == 200
    archive = export(api, "/v1/agents/bot").data
    assert send(api, "/v1/scopes/copy", archive).status_code == 200
    copy = ScopeRef(enterprise_id=ENTERPRISE, scope_id="copy")
    assert api.store.get_brief(copy, BriefVariant.FULL) is not None
