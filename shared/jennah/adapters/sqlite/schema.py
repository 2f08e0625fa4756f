"""The SQLite schema of the embedded memory store, created on open.

Table and column names match the Spanner schema (`adapters/spanner/schema.sql`)
so the two stores read alike. Differences that SQLite forces:

- Timestamps are INTEGER microseconds since the Unix epoch (UTC), so valid-time
  predicates compare integers and round-trip exactly.
- `memory_records` has an explicit `row_id INTEGER PRIMARY KEY` next to its
  UNIQUE (enterprise_id, scope_id, id) key: the FTS5 index refers to rows by
  rowid, and only an explicit INTEGER PRIMARY KEY keeps rowids stable across
  VACUUM. Every other table is WITHOUT ROWID, clustered on its key.
- Since version 8 a scope's rows have row ids of their own range: `scope_ordinals`
  numbers each scope that holds rows (1, 2, ...), and a row of scope n gets a row id
  between n * 2^32 + 1 and (n + 1) * 2^32 - 1 (the writer takes the range's next),
  so a word search reads from the FTS5 indexes only the rowids of its scope's range
  instead of every scope's matches. A destroyed scope's ordinal goes with its rows.
- Embeddings are sqlite-vec float32 BLOBs (written through `vec_f32`, so
  `vec_distance_cosine` and friends read them directly).
- `scope_generations` holds, per scope, a generation bumped by triggers on
  every insert, update or delete of a memory record, and the record count. The
  in-process vector index (`vector_index.py`) compares generations to know
  whether another connection changed a scope.
  A destroyed scope's row goes too; `generation_floor` keeps the highest
  generation any destroyed scope reached, and a scope's first row starts above
  it, so a recreated scope never repeats a generation an index may still hold.
- Two FTS5 indexes over the record text, external-content tables kept in step
  by triggers: `memory_records_text` (words, Porter-stemmed) for the word
  search, `memory_records_trigrams` (letter trigrams, since version 3) for the
  typo-tolerant one.
- `memory_records_for_search` (since version 4) holds, by row_id, what a word search
  checks of every match (scope, id, validity): a few dozen rows a page where the table
  holds two (each row carries its 1.5 KB embedding), so the search reads its matches
  through it (`INDEXED BY`), about twice as fast at 100k records.
- `memory_records_by_created_at` (since version 6) orders a scope's claims newest
  first: the memory card reads its pages through it.
- `claim_applies_to` (since version 7) holds, per node a claim applies to, the claim's
  (created_at, id), kept in step with `memory_records.applies_to` by triggers: the card
  filtered by `appliesTo` reads its pages through it instead of every claim of the scope.
- `commit_clock` keeps commit timestamps strictly increasing across processes.
- `scopes` is the scope registry (a scope's kind, creation time, creator and, since
  version 5, the IANA time zone its calendar is judged in).
- Since version 5 a record carries its claim links and front-matter extensions as JSON
  (`applies_to`, `related`: arrays; `extensions`: an object) and `needs_enrichment`;
  `memory_records_for_search` also holds `status`, so a word search leaves hidden
  claims (domain HIDDEN_STATUSES) out without reading the table; `briefs` holds the
  last compiled brief of each scope and variant, `change_log` the scope's dated
  change log (newest first by its key).
- Since version 6 `suppressions` holds a scope's suppression rules (design §10: what a
  forgotten claim leaves so formation never learns it back), by id; the embedding is a
  float32 BLOB like a record's.

`SCOPED_TABLES` names every table keyed by (enterprise_id, scope_id): destroying
a scope deletes from each of them. The schema version is `PRAGMA user_version`;
version 1 (no registry) is upgraded in place, its scopes registered as agent
workspaces (the kind they were written under is not recorded); versions 1 and
2 get the trigram index, built from the stored rows; versions 1 to 3 get
`memory_records_for_search`, built from the stored rows; versions 1 to 4 get the
version-5 columns (ALTER TABLE ... ADD COLUMN with their defaults: no links, no
extensions, time zone UTC), `memory_records_for_search` rebuilt with `status`, and the
two new tables; versions 1 to 5 get `memory_records_by_created_at`, built from the
stored rows, and the (empty) `suppressions` table; versions 1 to 6 get `claim_applies_to`,
built from the stored rows; versions 1 to 7 get `scope_ordinals` (in the order of each
scope's first row) and every row moved into its scope's range (its row id + the range's
start), the two FTS5 indexes rebuilt.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from jennah.errors import FailedPrecondition

if TYPE_CHECKING:
    from sqlite3 import Connection

SCHEMA_VERSION = 8
EMBEDDING_BYTES = 384 * 4

_TABLES = f"""
CREATE TABLE IF NOT EXISTS memory_records (
  row_id INTEGER PRIMARY KEY,
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  id TEXT NOT NULL,
  key TEXT,
  revision INTEGER NOT NULL,
  content_hash TEXT NOT NULL,
  text TEXT NOT NULL,
  summary TEXT NOT NULL,
  about TEXT NOT NULL,
  when_to_use TEXT NOT NULL,
  type TEXT NOT NULL,
  metadata TEXT NOT NULL CHECK (json_valid(metadata)),
  strength TEXT NOT NULL,
  pin INTEGER NOT NULL,
  authority TEXT NOT NULL,
  confidence REAL NOT NULL,
  sensitivity TEXT NOT NULL,
  valid_at INTEGER,
  invalid_at INTEGER,
  valid_until INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  retired_at INTEGER,
  status TEXT NOT NULL,
  supersedes TEXT,
  superseded_by TEXT,
  durability TEXT NOT NULL,
  reinforcement_count INTEGER NOT NULL,
  last_reinforced_at INTEGER,
  applies_to TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(applies_to)),
  related TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(related)),
  needs_enrichment INTEGER NOT NULL DEFAULT 0,
  extensions TEXT NOT NULL DEFAULT '{{}}' CHECK (json_valid(extensions)),
  embedding BLOB CHECK (embedding IS NULL OR length(embedding) = {EMBEDDING_BYTES}),
  UNIQUE (enterprise_id, scope_id, id)
);
CREATE INDEX IF NOT EXISTS memory_records_by_content_hash
  ON memory_records (enterprise_id, scope_id, content_hash);
CREATE UNIQUE INDEX IF NOT EXISTS memory_records_by_key
  ON memory_records (enterprise_id, scope_id, key) WHERE key IS NOT NULL;
CREATE INDEX IF NOT EXISTS memory_records_by_created_at
  ON memory_records (enterprise_id, scope_id, created_at DESC, id);
CREATE TABLE IF NOT EXISTS claim_applies_to (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  node_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  id TEXT NOT NULL,
  PRIMARY KEY (enterprise_id, scope_id, node_id, created_at DESC, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS memory_records_for_search
  ON memory_records (
    row_id, enterprise_id, scope_id, id, retired_at, valid_at, invalid_at, status
  );

CREATE VIRTUAL TABLE IF NOT EXISTS memory_records_text USING fts5(
  text,
  content='memory_records',
  content_rowid='row_id',
  tokenize='porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_records_trigrams USING fts5(
  text,
  content='memory_records',
  content_rowid='row_id',
  tokenize='trigram'
);

CREATE TABLE IF NOT EXISTS scope_ordinals (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  ordinal INTEGER NOT NULL UNIQUE,
  PRIMARY KEY (enterprise_id, scope_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS scope_generations (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  generation INTEGER NOT NULL,
  record_count INTEGER NOT NULL,
  PRIMARY KEY (enterprise_id, scope_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS evidence (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  id TEXT NOT NULL,
  ref TEXT NOT NULL,
  quote TEXT NOT NULL,
  recorded_at INTEGER NOT NULL,
  PRIMARY KEY (enterprise_id, scope_id, id, ref)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS memory_links (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  source_id TEXT NOT NULL,
  target_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (enterprise_id, scope_id, source_id, target_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS memory_links_by_target
  ON memory_links (enterprise_id, scope_id, target_id);

CREATE TABLE IF NOT EXISTS graph_nodes (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  node_id TEXT NOT NULL,
  label TEXT NOT NULL,
  node_type TEXT,
  properties TEXT NOT NULL CHECK (json_valid(properties)),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (enterprise_id, scope_id, node_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS graph_nodes_by_label
  ON graph_nodes (enterprise_id, scope_id, label);
CREATE INDEX IF NOT EXISTS graph_nodes_by_node_type
  ON graph_nodes (enterprise_id, scope_id, node_type);

CREATE TABLE IF NOT EXISTS graph_edges (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  edge_id TEXT NOT NULL,
  source TEXT NOT NULL,
  relation TEXT NOT NULL,
  target TEXT NOT NULL,
  properties TEXT NOT NULL CHECK (json_valid(properties)),
  valid_at INTEGER,
  invalid_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  retired_at INTEGER,
  supersedes TEXT,
  superseded_by TEXT,
  PRIMARY KEY (enterprise_id, scope_id, edge_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS graph_edges_by_source
  ON graph_edges (enterprise_id, scope_id, source, relation);
CREATE INDEX IF NOT EXISTS graph_edges_by_target
  ON graph_edges (enterprise_id, scope_id, target, relation);

CREATE TABLE IF NOT EXISTS execution_log_steps (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  step_id TEXT NOT NULL,
  tool_input TEXT NOT NULL,
  metadata TEXT NOT NULL CHECK (json_valid(metadata)),
  created_at INTEGER NOT NULL,
  PRIMARY KEY (enterprise_id, scope_id, step_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS formation_keys (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  formation_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  receipt_json TEXT NOT NULL,
  committed_at INTEGER NOT NULL,
  PRIMARY KEY (enterprise_id, scope_id, formation_key)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS commit_clock (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  last_commit_us INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS generation_floor (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  generation INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS scopes (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  created_by TEXT NOT NULL,
  time_zone TEXT NOT NULL DEFAULT 'UTC',
  PRIMARY KEY (enterprise_id, scope_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS briefs (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  variant TEXT NOT NULL,
  text TEXT NOT NULL,
  token_count INTEGER NOT NULL,
  expiries TEXT NOT NULL CHECK (json_valid(expiries)),
  compiled_at INTEGER NOT NULL,
  PRIMARY KEY (enterprise_id, scope_id, variant)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS change_log (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  recorded_at INTEGER NOT NULL,
  id TEXT NOT NULL,
  change TEXT NOT NULL,
  day TEXT NOT NULL,
  from_value TEXT NOT NULL,
  to_value TEXT NOT NULL,
  PRIMARY KEY (enterprise_id, scope_id, recorded_at DESC, id, change)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS suppressions (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  id TEXT NOT NULL,
  memory_id TEXT NOT NULL,
  about TEXT NOT NULL,
  summary TEXT NOT NULL,
  text TEXT NOT NULL,
  embedding BLOB CHECK (embedding IS NULL OR length(embedding) = {EMBEDDING_BYTES}),
  created_at INTEGER NOT NULL,
  created_by TEXT NOT NULL,
  PRIMARY KEY (enterprise_id, scope_id, id)
) WITHOUT ROWID;
"""

# Keep the keyword indexes and the per-scope generation in step with every write.
_TRIGGERS = """
CREATE TRIGGER IF NOT EXISTS memory_records_after_insert AFTER INSERT ON memory_records
BEGIN
  INSERT INTO memory_records_text (rowid, text) VALUES (NEW.row_id, NEW.text);
  INSERT INTO memory_records_trigrams (rowid, text) VALUES (NEW.row_id, NEW.text);
  INSERT INTO scope_generations (enterprise_id, scope_id, generation, record_count)
    VALUES (NEW.enterprise_id, NEW.scope_id,
            1 + coalesce((SELECT generation FROM generation_floor WHERE singleton = 1), 0), 1)
    ON CONFLICT (enterprise_id, scope_id) DO UPDATE
      SET generation = generation + 1, record_count = record_count + 1;
END;

CREATE TRIGGER IF NOT EXISTS memory_records_after_text_update
AFTER UPDATE OF text ON memory_records WHEN OLD.text IS NOT NEW.text
BEGIN
  INSERT INTO memory_records_text (memory_records_text, rowid, text)
    VALUES ('delete', OLD.row_id, OLD.text);
  INSERT INTO memory_records_text (rowid, text) VALUES (NEW.row_id, NEW.text);
  INSERT INTO memory_records_trigrams (memory_records_trigrams, rowid, text)
    VALUES ('delete', OLD.row_id, OLD.text);
  INSERT INTO memory_records_trigrams (rowid, text) VALUES (NEW.row_id, NEW.text);
END;

CREATE TRIGGER IF NOT EXISTS memory_records_after_insert_applies_to
AFTER INSERT ON memory_records WHEN NEW.applies_to <> '[]'
BEGIN
  INSERT OR IGNORE INTO claim_applies_to (enterprise_id, scope_id, node_id, created_at, id)
    SELECT NEW.enterprise_id, NEW.scope_id, value, NEW.created_at, NEW.id
    FROM json_each(NEW.applies_to);
END;

CREATE TRIGGER IF NOT EXISTS memory_records_after_applies_to_update
AFTER UPDATE OF applies_to, created_at, id ON memory_records
WHEN OLD.applies_to IS NOT NEW.applies_to OR OLD.created_at IS NOT NEW.created_at
  OR OLD.id IS NOT NEW.id
BEGIN
  DELETE FROM claim_applies_to
    WHERE enterprise_id = OLD.enterprise_id AND scope_id = OLD.scope_id
      AND node_id IN (SELECT value FROM json_each(OLD.applies_to))
      AND created_at = OLD.created_at AND id = OLD.id;
  INSERT OR IGNORE INTO claim_applies_to (enterprise_id, scope_id, node_id, created_at, id)
    SELECT NEW.enterprise_id, NEW.scope_id, value, NEW.created_at, NEW.id
    FROM json_each(NEW.applies_to);
END;

CREATE TRIGGER IF NOT EXISTS memory_records_after_update AFTER UPDATE ON memory_records
BEGIN
  UPDATE scope_generations SET generation = generation + 1
    WHERE enterprise_id = NEW.enterprise_id AND scope_id = NEW.scope_id;
END;

CREATE TRIGGER IF NOT EXISTS memory_records_after_delete AFTER DELETE ON memory_records
BEGIN
  DELETE FROM claim_applies_to
    WHERE enterprise_id = OLD.enterprise_id AND scope_id = OLD.scope_id
      AND node_id IN (SELECT value FROM json_each(OLD.applies_to))
      AND created_at = OLD.created_at AND id = OLD.id;
  INSERT INTO memory_records_text (memory_records_text, rowid, text)
    VALUES ('delete', OLD.row_id, OLD.text);
  INSERT INTO memory_records_trigrams (memory_records_trigrams, rowid, text)
    VALUES ('delete', OLD.row_id, OLD.text);
  UPDATE scope_generations
    SET generation = generation + 1, record_count = record_count - 1
    WHERE enterprise_id = OLD.enterprise_id AND scope_id = OLD.scope_id;
END;
"""


# Every table keyed by (enterprise_id, scope_id) that destroying a scope empties,
# the registry last. scope_generations is bookkeeping, handled apart.
SCOPED_TABLES = (
    "keyed_memory_links",  # keyed memory's tables: adapters/sqlite/keyed.py
    "keyed_memory_terms",
    "keyed_memories",
    "evidence",
    "briefs",
    "change_log",
    "suppressions",
    "memory_links",
    "claim_applies_to",
    "memory_records",
    "graph_nodes",
    "graph_edges",
    "execution_log_steps",
    "formation_keys",
    "scopes",
)

# Version 1 had no registry: every scope holding a row becomes an agent workspace,
# created when its first row was.
_REGISTER_VERSION_1_SCOPES = """
INSERT OR IGNORE INTO scopes (enterprise_id, scope_id, kind, created_at, created_by)
SELECT enterprise_id, scope_id, 'agent', min(created_at), '' FROM (
  SELECT enterprise_id, scope_id, created_at FROM memory_records
  UNION ALL SELECT enterprise_id, scope_id, recorded_at FROM evidence
  UNION ALL SELECT enterprise_id, scope_id, created_at FROM memory_links
  UNION ALL SELECT enterprise_id, scope_id, created_at FROM graph_nodes
  UNION ALL SELECT enterprise_id, scope_id, created_at FROM graph_edges
  UNION ALL SELECT enterprise_id, scope_id, created_at FROM execution_log_steps
  UNION ALL SELECT enterprise_id, scope_id, committed_at FROM formation_keys
) GROUP BY enterprise_id, scope_id
"""


def ensure_schema(conn: Connection) -> None:
    """Create the schema if the file is new, upgrade an older one; refuse a newer one."""
    if _version(conn) == SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = _version(conn)  # again: another process may have upgraded meanwhile
        if version > SCHEMA_VERSION:
            raise FailedPrecondition(
                f"the memory store file has schema version {version}; this build reads "
                f"version {SCHEMA_VERSION} and older",
                reason="SCHEMA_TOO_NEW",
            )
        if version < SCHEMA_VERSION:
            _create(conn, version)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _version(conn: Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


# The columns version 5 added to tables an older version created, with their defaults.
_VERSION_5_COLUMNS = (
    ("memory_records", "applies_to", "TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(applies_to))"),
    ("memory_records", "related", "TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(related))"),
    ("memory_records", "needs_enrichment", "INTEGER NOT NULL DEFAULT 0"),
    (
        "memory_records",
        "extensions",
        "TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(extensions))",
    ),
    ("scopes", "time_zone", "TEXT NOT NULL DEFAULT 'UTC'"),
)


def _create(conn: Connection, version: int) -> None:
    """Create what is missing and (re)create the triggers; register version-1 scopes."""
    if 0 < version < 5:
        _add_version_5_columns(conn)
    for statement in _statements(_TABLES):
        conn.execute(statement)
    for name in re.findall(r"CREATE TRIGGER IF NOT EXISTS (\w+)", _TRIGGERS):
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    if 0 < version < 8:  # scope row ranges are new in version 8 (no trigger fires here)
        _move_rows_into_scope_ranges(conn)
    for statement in _triggers():
        conn.execute(statement)
    if version == 1:
        conn.execute(_REGISTER_VERSION_1_SCOPES)
    if version < 3:  # the letter-trigram index is new in version 3: index the stored rows
        conn.execute(
            "INSERT INTO memory_records_trigrams (memory_records_trigrams) VALUES ('rebuild')"
        )
    if 0 < version < 7:  # the card's node index is new in version 7: index the stored rows
        conn.execute(_INDEX_STORED_APPLIES_TO)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


# A row id's scope range: scope n's rows have ids n * ROW_RANGE + 1 to (n + 1) * ROW_RANGE - 1.
ROW_RANGE = 1 << 32


def in_scope_range(row_id: str, ordinal: str) -> str:
    """SQL: the row id `row_id` lies in the range of the scope numbered `ordinal` (both SQL
    expressions)."""
    start = f"{ordinal} * {ROW_RANGE}"
    return f"{row_id} BETWEEN {start} + 1 AND {start} + {ROW_RANGE - 1}"


def _move_rows_into_scope_ranges(conn: Connection) -> None:
    """Number the scopes holding rows in the order of their first row, move each row into
    its scope's range (its old row id, below ROW_RANGE, added to the range's start) and
    rebuild both FTS5 indexes, which refer to rows by row id. A scope numbered already
    keeps its number, a row in its range already stays."""
    (highest,) = conn.execute(
        "SELECT coalesce(max(row_id), 0) FROM memory_records WHERE row_id < ?", (ROW_RANGE,)
    ).fetchone()
    if not highest:
        return
    conn.execute(
        "INSERT INTO scope_ordinals (enterprise_id, scope_id, ordinal) "
        "SELECT enterprise_id, scope_id, (SELECT coalesce(max(ordinal), 0) FROM scope_ordinals) "
        "+ row_number() OVER (ORDER BY min(row_id)) FROM memory_records AS r "
        "WHERE row_id < ? AND NOT EXISTS (SELECT 1 FROM scope_ordinals AS o "
        "WHERE o.enterprise_id = r.enterprise_id AND o.scope_id = r.scope_id) "
        "GROUP BY enterprise_id, scope_id",
        (ROW_RANGE,),
    )
    conn.execute(
        "UPDATE memory_records SET row_id = row_id + ? * (SELECT ordinal FROM scope_ordinals "
        "AS o WHERE o.enterprise_id = memory_records.enterprise_id "
        "AND o.scope_id = memory_records.scope_id) WHERE row_id < ?",
        (ROW_RANGE, ROW_RANGE),
    )
    for index in ("memory_records_text", "memory_records_trigrams"):
        conn.execute(f"INSERT INTO {index} ({index}) VALUES ('rebuild')")


_INDEX_STORED_APPLIES_TO = """
INSERT OR IGNORE INTO claim_applies_to (enterprise_id, scope_id, node_id, created_at, id)
SELECT memory_records.enterprise_id, memory_records.scope_id, node.value,
       memory_records.created_at, memory_records.id
FROM memory_records, json_each(memory_records.applies_to) AS node
WHERE memory_records.applies_to <> '[]'
"""


def _add_version_5_columns(conn: Connection) -> None:
    """Add the version-5 columns to an older file's tables (the tables exist: version 1
    had every table but the registry, which version 2 added) and drop the search index
    so `_TABLES` recreates it with `status`."""
    for table, column, definition in _VERSION_5_COLUMNS:
        present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if present and column not in present:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
    conn.execute("DROP INDEX IF EXISTS memory_records_for_search")


def _statements(text: str) -> list[str]:
    return [s.strip() for s in text.split(";") if s.strip()]


def _triggers() -> list[str]:
    """Trigger bodies contain ';', so split on the blank line between triggers."""
    return [block.strip() for block in _TRIGGERS.split("\n\n") if block.strip()]
