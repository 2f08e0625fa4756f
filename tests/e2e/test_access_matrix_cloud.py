"""The access matrix on the production adapters: Cloud Spanner (memory, usage) and Firestore
(identities, vocabularies, formation operations), each on its local emulator.

The emulators are shared by the whole test session, so each world's enterprise
ids, principals and key ids carry a unique tag, and "nothing written" compares
every row and document of the world's two enterprises (and the credential
indexes that point at them). To keep the emulators' share of the run small, every
case that writes nothing (`SHARED_CASES`: the refusals, and every case of a route
that only reads) runs in ONE world, each checked to write nothing at all, so each
finds the world as built; the cases that may write (`OWN_CASES`) get a world each.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from google.cloud.firestore_v1.base_query import FieldFilter

from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.bootstrap import Container
from jennah.settings import Settings
from tests.unit.test_access_matrix import (
    OWN_CASES,
    SHARED_CASES,
    SharedWorld,
    World,
    build_world,
    check_case,
    check_shared_case,
)

pytestmark = [pytest.mark.spanner, pytest.mark.firestore, pytest.mark.slow]

IDENTITY_COLLECTIONS = ("users", "apiKeys", "roleBindings")
VOCABULARY_COLLECTIONS = ("vocabulary", "scopeVocabularies", "operations")
INDEXES = ("userIndex", "apiKeyIndex")
# the malformed credentials that reach the identity store (the others never leave Access)
MALFORMED_LOOKUPS = (
    "Bearer not-a-credential",
    "Bearer jk_kroot_" + "00" * 32,
    "Bearer ju_dXNlcjpyb290_" + "00" * 32,
)


TABLES_WITH_TENANTS = (
    "SELECT table_name FROM information_schema.columns "
    "WHERE table_schema = '' AND column_name = 'enterprise_id' ORDER BY table_name"
)


def spanner_rows(database: Any, enterprises: tuple[str, ...]) -> dict[str, list[str]]:
    """Every row of every tenant table that belongs to `enterprises`, each row all its
    columns as JSON, read in ONE query (a query per table made this the most of the
    module's time)."""
    from google.cloud import spanner

    ids = spanner.param_types.Array(spanner.param_types.STRING)
    tables = _tenant_tables(database)
    rows: dict[str, list[str]] = {table: [] for table in tables}
    every_row = " UNION ALL ".join(
        f"SELECT '{table}' AS tbl, TO_JSON(t) AS row FROM {table} AS t "
        "WHERE enterprise_id IN UNNEST(@ids)"
        for table in tables
    )
    with database.snapshot() as snapshot:
        found = snapshot.execute_sql(
            every_row, params={"ids": list(enterprises)}, param_types={"ids": ids}
        )
        for table, row in found:
            rows[table].append(json.dumps(row, sort_keys=True))
    return {table: sorted(found) for table, found in rows.items()}


_TABLES: dict[str, list[str]] = {}


def _tenant_tables(database: Any) -> list[str]:
    if database.name not in _TABLES:
        with database.snapshot() as snapshot:
            _TABLES[database.name] = [row[0] for row in snapshot.execute_sql(TABLES_WITH_TENANTS)]
    return _TABLES[database.name]


def firestore_documents(client: Any, enterprises: tuple[str, ...]) -> dict[str, Any]:
    documents: dict[str, Any] = {}
    for enterprise in enterprises:
        root = client.collection("enterprises").document(enterprise)
        documents[root.path] = root.get().to_dict()
        for name in IDENTITY_COLLECTIONS + VOCABULARY_COLLECTIONS:
            for doc in root.collection(name).stream():
                documents[doc.reference.path] = doc.to_dict()
    for index in INDEXES:
        pointing = client.collection(index).where(
            filter=FieldFilter("enterpriseId", "in", list(enterprises))
        )
        for doc in pointing.stream():
            documents[doc.reference.path] = doc.to_dict()
    memberships = client.collection_group("memberships").where(  # userIndex/{principal}/…
        filter=FieldFilter("enterpriseId", "in", list(enterprises))
    )
    for doc in memberships.stream():
        documents[doc.reference.path] = doc.to_dict()
    return documents


@pytest.fixture(scope="module")
def cloud() -> tuple[Any, Any]:
    from tests.support.firestore_emulator import firestore_test_client
    from tests.support.spanner_emulator import spanner_test_database

    return spanner_test_database(), firestore_test_client()


def cloud_world(cloud: tuple[Any, Any]) -> World:
    from jennah.adapters.firestore.identity import FirestoreIdentityStore
    from jennah.adapters.firestore.operations import FirestoreOperationStore
    from jennah.adapters.firestore.vocabulary import FirestoreVocabularyStore
    from jennah.adapters.spanner.ledger import SpannerUsageLedger
    from jennah.adapters.spanner.store import SpannerStore

    database, client = cloud
    tag = "-" + uuid.uuid4().hex[:10]
    container = Container(
        Settings(embedder="hashing", store="spanner", control="firestore"),
        store=SpannerStore(database),
        identity=FirestoreIdentityStore(client),
        vocabularies=FirestoreVocabularyStore(client),
        ledger=SpannerUsageLedger(database),
        operations=FirestoreOperationStore(client),
        embedder=HashingEmbedder(),
    )
    mine = ("local" + tag, "acme" + tag)

    def snapshot(enterprise: str | None) -> Any:
        chosen = mine if enterprise is None else (enterprise,)
        return spanner_rows(database, chosen), firestore_documents(client, chosen)

    return build_world(container, snapshot, tag)


def test_the_snapshot_holds_every_column_of_every_row(cloud: tuple[Any, Any]) -> None:
    """`spanner_rows` reads what a SELECT * of each table reads (every column but the
    hidden TOKENLIST ones, which derive from the others)."""
    from google.cloud import spanner

    database, _ = cloud
    world = cloud_world(cloud)
    enterprises = [world.target, world.other]
    rows = spanner_rows(database, (world.target, world.other))
    assert rows["memory_records"] and rows["scopes"]
    with database.snapshot(multi_use=True) as snapshot:
        for table, found in rows.items():
            every = snapshot.execute_sql(
                f"SELECT * FROM {table} WHERE enterprise_id IN UNNEST(@ids)",
                params={"ids": enterprises},
                param_types={"ids": spanner.param_types.Array(spanner.param_types.STRING)},
            )
            selected = list(every)
            names = {field.name for field in every.fields}
            assert len(found) == len(selected), table
            assert all(set(json.loads(row)) == names for row in found), table


@pytest.fixture(scope="module")
def shared_world(cloud: tuple[Any, Any]) -> SharedWorld:
    return SharedWorld(lambda: cloud_world(cloud))


@pytest.mark.parametrize(("operation_id", "case"), SHARED_CASES)
def test_matrix_on_spanner_and_firestore_in_a_shared_world(
    shared_world: SharedWorld, operation_id: str, case: str
) -> None:
    check_shared_case(shared_world, operation_id, case, MALFORMED_LOOKUPS)


@pytest.mark.parametrize(("operation_id", "case"), OWN_CASES)
def test_matrix_on_spanner_and_firestore(
    cloud: tuple[Any, Any], operation_id: str, case: str
) -> None:
    check_case(cloud_world(cloud), operation_id, case, MALFORMED_LOOKUPS)
