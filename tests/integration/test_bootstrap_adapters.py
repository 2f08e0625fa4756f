"""Settings choose the adapters; Vertex AI needs a project.

Integration: the composition root builds the real adapters (SQLite files, the local pool)."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import google.cloud
import pytest

from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.adapters.embedding.vertex import VertexEmbedder
from jennah.adapters.models.rules import RulesModel
from jennah.adapters.models.vertex import VertexModel
from jennah.adapters.sqlite.vocabulary import SqliteVocabularyStore
from jennah.bootstrap import Container, build_embedder, build_model, first_poll
from jennah.errors import Internal
from jennah.settings import Settings


def test_defaults_are_offline() -> None:
    assert isinstance(build_model(Settings()), RulesModel)
    assert isinstance(build_embedder(Settings(embedder="hashing")), HashingEmbedder)


def test_vertex_adapters_are_built_lazily_from_settings() -> None:
    settings = Settings(
        embedder="vertex",
        formation_model="vertex",
        vertex_project="acme-prod",
        vertex_base_url="http://127.0.0.1:1",
    )
    assert isinstance(build_embedder(settings), VertexEmbedder)  # no call made yet
    assert isinstance(build_model(settings), VertexModel)


@pytest.mark.parametrize(
    ("settings", "what"),
    [
        (Settings(embedder="vertex"), "JENNAH_EMBEDDER=vertex"),
        (Settings(formation_model="vertex"), "JENNAH_FORMATION_MODEL=vertex"),
    ],
)
def test_vertex_without_a_project_is_a_clear_misconfiguration(
    settings: Settings, what: str
) -> None:
    build = build_embedder if settings.embedder == "vertex" else build_model
    with pytest.raises(Internal, match=f"{what} needs JENNAH_VERTEX_PROJECT"):
        build(settings)  # type: ignore[operator]


# the vocabulary store, beside the identities


def test_the_sqlite_vocabulary_store_is_in_the_memory_file(tmp_path: Path) -> None:
    container = Container(Settings(data_dir=tmp_path / "data"))
    vocabularies = container.vocabularies
    assert isinstance(vocabularies, SqliteVocabularyStore)
    assert vocabularies.path == tmp_path / "data" / "memory.db"
    assert container.vocabularies is vocabularies  # built once
    container.close()


def test_identities_and_vocabularies_share_one_firestore_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[Any] = []

    class Client:
        def __init__(self, **kwargs: Any) -> None:
            made.append((self, kwargs))

    fake = types.ModuleType("google.cloud.firestore")
    fake.Client = Client  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "google.cloud.firestore", fake)
    monkeypatch.setattr(google.cloud, "firestore", fake, raising=False)
    container = Container(
        Settings(control="firestore", firestore_project="p1", firestore_database="db1")
    )
    vocabularies, identity = container.vocabularies, container.identity
    assert type(vocabularies).__name__ == "FirestoreVocabularyStore"
    assert type(identity).__name__ == "FirestoreIdentityStore"
    ((client, kwargs),) = made
    assert kwargs == {"project": "p1", "database": "db1"}
    assert vocabularies._client is client and identity._client is client  # type: ignore[attr-defined]


def test_closing_the_container_closes_the_vocabulary_store() -> None:
    class Closable:
        closed = False

        def close(self) -> None:
            self.closed = True

    store = Closable()
    Container(Settings(), vocabularies=store).close()  # type: ignore[arg-type]
    assert store.closed


# the usage ledger, the operation store and the formation queue


def test_the_default_plan_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jennah.domain.billing import Plan

    monkeypatch.setenv("JENNAH_DEFAULT_PLAN", "SCALE")
    container = Container(Settings(data_dir=tmp_path))
    try:
        assert container.ledger.get_billing("acme").plan is Plan.SCALE
    finally:
        container.close()


def test_the_embedded_default_keeps_operations_locally_and_works_them_in_process(
    tmp_path: Path,
) -> None:
    from jennah.adapters.local_queue import LocalTaskQueue
    from jennah.adapters.sqlite.operations import SqliteOperationStore

    container = Container(Settings(data_dir=tmp_path))
    try:
        assert isinstance(container.operations, SqliteOperationStore)
        assert isinstance(container.tasks, LocalTaskQueue)
    finally:
        container.close()


def test_form_waits_poll_their_operation_less_often_when_the_workers_are_in_process(
    tmp_path: Path,
) -> None:
    # jnh serve's workers settle what they finish, which wakes the waiting form at once:
    # its polls of the operation store (one read each) can start far apart
    from jennah.services.formation.use_case import FIRST_POLL_SECONDS, LOCAL_FIRST_POLL_SECONDS

    local = Container(
        Settings(data_dir=tmp_path, embedder="hashing", formation_model="rules"),
        tasks=object(),  # type: ignore[arg-type]  # no pool: only the wiring is looked at
    )
    try:
        assert local.formation.first_poll == LOCAL_FIRST_POLL_SECONDS
    finally:
        local.close()
    assert LOCAL_FIRST_POLL_SECONDS >= 10 * FIRST_POLL_SECONDS
    assert first_poll(Settings(formation_queue="cloud_tasks")) == FIRST_POLL_SECONDS


def test_cloud_tasks_needs_the_worker_url(tmp_path: Path) -> None:
    from jennah.errors import FailedPrecondition

    container = Container(Settings(data_dir=tmp_path, formation_queue="cloud_tasks"))
    with pytest.raises(FailedPrecondition, match="JENNAH_FORM_WORKER_URL"):
        _ = container.tasks


def test_warming_the_container_builds_the_stores_search_indexes(tmp_path: Path) -> None:
    # `jnh serve` warms the container at start: a scope's vector index is then built
    # before its first query
    from jennah.adapters.sqlite.store import SqliteStore
    from jennah.domain.models import ScopeRef
    from jennah.services.commands import ChunkInput
    from tests.contract.conftest import commit_items

    scope = ScopeRef(enterprise_id="acme", scope_id="warm")
    settings = Settings(data_dir=tmp_path, embedder="hashing")
    container = Container(settings)
    commit_items(container.store, scope, chunks=[ChunkInput(text="warm me")])
    container.close()
    container = Container(settings)
    try:
        container.warm()
        store = container.store
        assert isinstance(store, SqliteStore)
        assert store._indexes.get(scope) is not None
    finally:
        container.close()
