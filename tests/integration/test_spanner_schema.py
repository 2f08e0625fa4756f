"""The Spanner DDL: schema.sql applies to the emulator, keys lead with the tenancy,
every domain field has a column, and the production-only DDL says what production needs."""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions as google_errors

from jennah.adapters.spanner import schema
from jennah.adapters.spanner.schema import (
    ddl_statements,
    production_only_statements,
    split_statements,
)
from jennah.domain.billing import EnterpriseBilling, UsageRecord
from jennah.domain.models import (
    EMBEDDING_DIMENSIONS,
    BriefVariant,
    ChangeLogEntry,
    Evidence,
    ExecutionLogStep,
    FormationKeyRecord,
    GraphEdge,
    GraphNode,
    MemoryLink,
    MemoryRecord,
    ScopeRecord,
    StoredBrief,
)
from jennah.domain.suppression import Suppression
from tests.support.spanner_emulator import create_database, session_emulator, start_emulator

pytestmark = pytest.mark.spanner

SCOPED_TABLES = {
    "memory_records",
    "evidence",
    "memory_links",
    "graph_nodes",
    "graph_edges",
    "execution_log_steps",
    "formation_keys",
    "scopes",
    "briefs",
    "change_log",
    "suppressions",
    "keyed_memories",  # keyed memory (keyed.sql)
    "keyed_memory_terms",
    "keyed_memory_links",
}
# Usage and billing: keyed by enterprise alone, so they outlive destroyed scopes.
ENTERPRISE_TABLES = {
    "usage_records",
    "usage_hours",
    "usage_days",
    "formation_reservations",
    "billing_settings",
}
# Keys that lead with neither: the rollup's global watermark and its index by time.
GLOBAL_KEYS = {("usage_rollup_state", "PRIMARY_KEY"), ("usage_records", "usage_records_by_time")}
TABLES = SCOPED_TABLES | ENTERPRISE_TABLES | {"usage_rollup_state"}
SEARCH_INDEX = "memory_records_text_search"
NGRAM_SEARCH_INDEX = "memory_records_ngram_search"
SEARCH_INDEXES = {SEARCH_INDEX, NGRAM_SEARCH_INDEX}


@pytest.fixture(scope="module")
def fresh_database() -> Iterator[Any]:
    """A database of its own, created from schema.sql alone (creation is the first check)."""
    database = create_database(session_emulator().host)
    yield database
    database.drop()


def _rows(database: Any, sql: str) -> list[list[Any]]:
    with database.snapshot() as snapshot:
        return list(snapshot.execute_sql(sql, timeout=30))


def test_schema_creates_every_table(fresh_database: Any) -> None:
    rows = _rows(
        fresh_database, "SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = ''"
    )
    assert {row[0] for row in rows} == TABLES


def test_every_key_and_index_leads_with_the_tenancy(fresh_database: Any) -> None:
    rows = _rows(
        fresh_database,
        "SELECT TABLE_NAME, INDEX_NAME, COLUMN_NAME FROM INFORMATION_SCHEMA.INDEX_COLUMNS"
        " WHERE TABLE_SCHEMA = '' AND ORDINAL_POSITION IS NOT NULL"  # key columns, not STORING
        " ORDER BY TABLE_NAME, INDEX_NAME, ORDINAL_POSITION",
    )
    leading: dict[tuple[str, str], list[str]] = {}
    for table, index, column in rows:
        leading.setdefault((table, index), []).append(column)
    primary_keys = {table for table, index in leading if index == "PRIMARY_KEY"}
    assert primary_keys == TABLES
    assert set(leading) >= GLOBAL_KEYS
    for (table, index), columns in leading.items():
        if index in SEARCH_INDEXES or (table, index) in GLOBAL_KEYS:
            continue  # partitioned by the tenancy instead (checked below), or global
        if table in ENTERPRISE_TABLES:
            assert columns[0] == "enterprise_id", (table, index, columns)
        else:
            assert columns[:2] == ["enterprise_id", "scope_id"], (table, index, columns)


def test_no_usage_table_has_a_scope_id_so_destroying_a_scope_never_erases_usage(
    fresh_database: Any,
) -> None:
    rows = _rows(
        fresh_database,
        "SELECT TABLE_NAME FROM INFORMATION_SCHEMA.COLUMNS"
        " WHERE TABLE_SCHEMA = '' AND COLUMN_NAME = 'scope_id'",
    )
    assert {row[0] for row in rows} == SCOPED_TABLES


def test_usage_is_deleted_past_its_retention(fresh_database: Any) -> None:
    rows = _rows(
        fresh_database,
        "SELECT TABLE_NAME, ROW_DELETION_POLICY_EXPRESSION FROM INFORMATION_SCHEMA.TABLES"
        " WHERE TABLE_SCHEMA = '' AND ROW_DELETION_POLICY_EXPRESSION IS NOT NULL",
    )
    policies = {table: policy for table, policy in rows}
    assert set(policies) == {"usage_records", "usage_hours", "usage_days"}
    assert all("INTERVAL 401 DAY" in policy for policy in policies.values()), policies


@pytest.mark.parametrize("index", sorted(SEARCH_INDEXES))
def test_search_indexes_are_partitioned_by_enterprise_and_scope(index: str) -> None:
    (statement,) = [s for s in ddl_statements() if f"SEARCH INDEX {index} " in s]
    assert statement.endswith("PARTITION BY enterprise_id, scope_id")


def test_evidence_is_interleaved_in_memory_records_and_erased_with_them(
    fresh_database: Any,
) -> None:
    rows = _rows(
        fresh_database,
        "SELECT PARENT_TABLE_NAME, ON_DELETE_ACTION FROM INFORMATION_SCHEMA.TABLES"
        " WHERE TABLE_SCHEMA = '' AND TABLE_NAME = 'evidence'",
    )
    assert rows == [["memory_records", "CASCADE"]]


# Domain field -> column, where the name differs (a suppression's memory_id is its own
# column: the forgotten claim's id).
RENAMED = {"scope": ["enterprise_id", "scope_id"], "memory_id": ["id"]}
KEPT = {"suppressions": {"memory_id"}}


@pytest.mark.parametrize(
    ("table", "model"),
    [
        ("memory_records", MemoryRecord),
        ("evidence", Evidence),
        ("memory_links", MemoryLink),
        ("graph_nodes", GraphNode),
        ("graph_edges", GraphEdge),
        ("execution_log_steps", ExecutionLogStep),
        ("formation_keys", FormationKeyRecord),
        ("scopes", ScopeRecord),
        ("briefs", StoredBrief),
        ("change_log", ChangeLogEntry),
        ("suppressions", Suppression),
        ("usage_records", UsageRecord),
        ("billing_settings", EnterpriseBilling),
    ],
)
def test_every_domain_field_has_a_column(fresh_database: Any, table: str, model: Any) -> None:
    rows = _rows(
        fresh_database,
        "SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMNS"
        f" WHERE TABLE_SCHEMA = '' AND TABLE_NAME = '{table}'",
    )
    columns = {row[0] for row in rows}
    for name in model.model_fields:
        kept = name in KEPT.get(table, set())
        for column in [name] if kept else RENAMED.get(name, [name]):
            assert column in columns, f"{model.__name__}.{name} has no column in {table}"


def test_embedding_column_has_the_embedding_dimensions() -> None:
    (table,) = [s for s in ddl_statements() if s.startswith("CREATE TABLE memory_records ")]
    assert f"embedding ARRAY<FLOAT32>(vector_length=>{EMBEDDING_DIMENSIONS})" in table


def test_statements_are_split_without_comments_or_separators() -> None:
    statements = ddl_statements()
    files = [schema.SCHEMA_FILE, *schema.APPENDED_FILES]
    texts = [Path(schema.__file__).with_name(name).read_text() for name in files]
    starts = sum(len(re.findall(r"^(CREATE|ALTER) ", t, flags=re.MULTILINE)) for t in texts)
    assert len(statements) == starts
    for statement in statements:
        assert ";" not in statement
        assert "--" not in statement
        assert statement.startswith(("CREATE ", "ALTER "))
    assert split_statements("-- a\nCREATE TABLE t (a INT64) PRIMARY KEY (a); -- b\n;\n") == [
        "CREATE TABLE t (a INT64) PRIMARY KEY (a)"
    ]


def test_production_only_ddl_is_the_cosine_vector_index_on_record_embeddings() -> None:
    (statement,) = production_only_statements()
    assert re.match(r"CREATE VECTOR INDEX \w+ ON memory_records \(embedding\)", statement), (
        statement
    )
    # embedding is nullable, so Spanner requires the index to filter NULLs
    assert "WHERE embedding IS NOT NULL" in statement
    assert "distance_type = 'COSINE'" in statement
    stored = re.search(r"STORING \(([^)]*)\)", statement)
    assert stored is not None
    assert {"valid_at", "invalid_at", "retired_at"} <= {
        c.strip() for c in stored.group(1).split(",")
    }


def on_a_fresh_emulator(body: Callable[[str], None]) -> None:
    """Run `body(host)` on an emulator of its own for the schema changes on existing
    databases (update_ddl). The emulator binary crashes at times on such a change (a
    segfault in its gRPC server), and the admin client then retries against the dead
    port for many minutes: so the body runs on a thread watched together with the
    emulator's process. A crash abandons that attempt (the thread is a daemon; its
    emulator and databases are gone) and starts over on a new emulator; a second crash
    skips the test, naming the emulator: it is not our code that failed."""
    for _ in range(2):
        emulator = start_emulator()
        process = emulator.process
        outcome: list[BaseException | None] = []

        def attempt(host: str = emulator.host, out: list[BaseException | None] = outcome) -> None:
            try:
                body(host)
            except BaseException as error:  # handed to the test's thread
                out.append(error)
            else:
                out.append(None)

        worker = threading.Thread(target=attempt, daemon=True)
        worker.start()
        while worker.is_alive() and (process is None or process.poll() is None):
            worker.join(0.2)  # wakes when the body ends or the emulator has exited
        crashed = not outcome and process is not None and process.poll() is not None
        emulator.stop()
        if crashed:
            continue
        worker.join()
        if outcome[0] is not None:
            raise outcome[0]
        return
    pytest.skip("the Spanner emulator crashed twice on a schema change (its own segfault)")


def test_emulator_still_lacks_vector_indexes() -> None:
    """If this fails, the emulator learned CREATE VECTOR INDEX: fold it into schema.sql."""

    def check(host: str) -> None:
        database = create_database(host)
        with pytest.raises(google_errors.GoogleAPICallError, match="VECTOR"):
            database.update_ddl(production_only_statements()).result(60)

    on_a_fresh_emulator(check)


def test_the_claims_ddl_upgrades_a_database_created_before_it() -> None:
    """A database deployed before claims.sql (its rows written) takes the appended DDL
    in place; stored rows read as no links, no extensions, time zone UTC."""

    def check(host: str) -> None:
        from google.cloud.spanner_v1 import COMMIT_TIMESTAMP

        from jennah.adapters.spanner.store import SpannerStore
        from jennah.domain.models import ScopeRef
        from tests.support.spanner_emulator import ADMIN_SECONDS, emulator_instance

        before = split_statements(Path(schema.__file__).with_name(schema.SCHEMA_FILE).read_text())
        for name in schema.APPENDED_FILES[: schema.APPENDED_FILES.index("claims.sql")]:
            before += split_statements(Path(schema.__file__).with_name(name).read_text())
        instance = emulator_instance(host)
        database = instance.database(f"upgrade-{uuid.uuid4().hex[:12]}", ddl_statements=before)
        database.create().result(ADMIN_SECONDS)
        scope = ScopeRef(enterprise_id="e", scope_id="s")
        with database.batch() as batch:
            batch.insert(
                "scopes",
                ["enterprise_id", "scope_id", "kind", "created_at", "created_by"],
                [["e", "s", "agent", COMMIT_TIMESTAMP, ""]],
            )
            columns = {
                "enterprise_id": "e", "scope_id": "s", "id": "c-1", "revision": 1,
                "content_hash": "h", "text": "old row", "summary": "", "about": "",
                "when_to_use": "", "type": "fact", "metadata": "{}", "strength": "soft",
                "pin": False, "authority": "system", "confidence": 1.0,
                "sensitivity": "normal", "created_at": COMMIT_TIMESTAMP,
                "updated_at": COMMIT_TIMESTAMP, "status": "active", "durability": "durable",
                "reinforcement_count": 0,
            }  # fmt: skip
            batch.insert("memory_records", list(columns), [list(columns.values())])
        claims = Path(schema.__file__).with_name("claims.sql").read_text()
        database.update_ddl(split_statements(claims)).result(ADMIN_SECONDS)

        store = SpannerStore(database)
        (record,) = store.get_chunks(scope, ["c-1"])
        assert (record.applies_to, record.related, record.extensions) == ([], [], {})
        assert record.needs_enrichment is False
        registration = store.get_scope(scope)
        assert registration is not None and registration.time_zone == "UTC"
        assert store.get_brief(scope, BriefVariant.FULL) is None

    on_a_fresh_emulator(check)


def test_the_suppressions_ddl_upgrades_a_database_created_before_it() -> None:
    """A database deployed before suppressions.sql (a claim stored) takes it in place:
    it has no rules, and a rule is then written and read with the claim's scope."""

    def check(host: str) -> None:
        from google.cloud.spanner_v1 import COMMIT_TIMESTAMP

        from jennah.adapters.spanner.store import SpannerStore
        from jennah.domain.models import CommitPlan, ScopeRef
        from jennah.errors import InvalidArgument
        from tests.support.spanner_emulator import ADMIN_SECONDS, emulator_instance

        index = schema.APPENDED_FILES.index("suppressions.sql")
        before = split_statements(Path(schema.__file__).with_name(schema.SCHEMA_FILE).read_text())
        for name in schema.APPENDED_FILES[:index]:
            before += split_statements(Path(schema.__file__).with_name(name).read_text())
        instance = emulator_instance(host)
        database = instance.database(f"upgrade-{uuid.uuid4().hex[:12]}", ddl_statements=before)
        database.create().result(ADMIN_SECONDS)
        scope = ScopeRef(enterprise_id="e", scope_id="s")
        with database.batch() as batch:
            batch.insert(
                "scopes",
                ["enterprise_id", "scope_id", "kind", "created_at", "created_by", "time_zone"],
                [["e", "s", "agent", COMMIT_TIMESTAMP, "", "UTC"]],
            )
        store = SpannerStore(database)
        with pytest.raises(InvalidArgument, match="Table not found: suppressions"):
            store.list_suppressions(scope, None, 10)  # the table is not there yet

        ddl = Path(schema.__file__).with_name("suppressions.sql").read_text()
        database.update_ddl(split_statements(ddl)).result(ADMIN_SECONDS)

        assert store.list_suppressions(scope, None, 10) == []
        vector = [0.5] * EMBEDDING_DIMENSIONS
        rule = Suppression(id="sup_1", memory_id="chk_1", text="Ana is allergic to peanuts.",
                           embedding=vector, created_by="user:ana")  # fmt: skip
        store.apply(CommitPlan(scope=scope, suppressions=[rule]))
        (stored,) = store.list_suppressions(scope, None, 10)
        assert (stored.id, stored.memory_id, stored.text) == ("sup_1", "chk_1", rule.text)
        assert stored.created_at is not None and stored.embedding is not None

    on_a_fresh_emulator(check)
