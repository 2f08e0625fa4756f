-- Jennah Memory on Cloud Spanner (GoogleSQL dialect): the ONE schema source.
--
-- Applied as-is by the test tooling (tests/support/spanner_emulator.py) and, for
-- Terraform's google_spanner_database.ddl, read through
-- jennah.adapters.spanner.schema.ddl_statements(). Statements are separated by
-- ';' and '--' starts a comment (neither appears inside a literal). DDL the
-- emulator cannot run (the ANN vector index) lives apart, in vector_index.sql.
--
-- Every table is keyed by (enterprise_id, scope_id, ...): tenancy is the key
-- prefix, so every row of one scope is contiguous and no key can collide across
-- scopes. Table and column names match the SQLite adapter's.

-- The memory record: one row per claim (chunk, formed fact, keyed memory).
CREATE TABLE memory_records (
  enterprise_id STRING(256) NOT NULL,
  scope_id STRING(256) NOT NULL,
  id STRING(128) NOT NULL,
  -- identity
  `key` STRING(256),
  revision INT64 NOT NULL,
  content_hash STRING(64) NOT NULL,
  -- content
  `text` STRING(MAX) NOT NULL,
  summary STRING(MAX) NOT NULL,
  about STRING(MAX) NOT NULL,
  when_to_use STRING(MAX) NOT NULL,
  type STRING(32) NOT NULL,
  metadata JSON NOT NULL,
  -- weight and trust
  strength STRING(16) NOT NULL,
  pin BOOL NOT NULL,
  authority STRING(32) NOT NULL,
  confidence FLOAT64 NOT NULL,
  sensitivity STRING(32) NOT NULL,
  -- time, bi-temporal: valid time, then transaction time
  valid_at TIMESTAMP,
  invalid_at TIMESTAMP,
  valid_until TIMESTAMP,
  created_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
  updated_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
  retired_at TIMESTAMP,
  -- lifecycle
  status STRING(16) NOT NULL,
  supersedes STRING(128),
  superseded_by STRING(128),
  durability STRING(16) NOT NULL,
  reinforcement_count INT64 NOT NULL,
  last_reinforced_at TIMESTAMP,
  -- retrieval: unit-length 384-d embedding (vector_length lets production
  -- build the ANN index in vector_index.sql), and the keyword token list
  embedding ARRAY<FLOAT32>(vector_length=>384),
  text_tokens TOKENLIST AS (TOKENIZE_FULLTEXT(`text`)) HIDDEN,
) PRIMARY KEY (enterprise_id, scope_id, id);

-- identical wording in any validity window
CREATE INDEX memory_records_by_content_hash
  ON memory_records (enterprise_id, scope_id, content_hash);

-- a keyed memory's key is unique within its scope; unkeyed rows are not indexed
CREATE UNIQUE NULL_FILTERED INDEX memory_records_by_key
  ON memory_records (enterprise_id, scope_id, `key`);

-- keyword search over the record text (SEARCH(text_tokens, @query))
CREATE SEARCH INDEX memory_records_text_search
  ON memory_records (text_tokens)
  PARTITION BY enterprise_id, scope_id;

-- The evidence ledger: one line per (memory, ref); erased with its memory.
CREATE TABLE evidence (
  enterprise_id STRING(256) NOT NULL,
  scope_id STRING(256) NOT NULL,
  id STRING(128) NOT NULL,
  ref STRING(256) NOT NULL,
  quote STRING(MAX) NOT NULL,
  recorded_at TIMESTAMP NOT NULL,
) PRIMARY KEY (enterprise_id, scope_id, id, ref),
  INTERLEAVE IN PARENT memory_records ON DELETE CASCADE;

-- Directed links between memory records (keyed memory, at most 12 per record).
CREATE TABLE memory_links (
  enterprise_id STRING(256) NOT NULL,
  scope_id STRING(256) NOT NULL,
  source_id STRING(128) NOT NULL,
  target_id STRING(128) NOT NULL,
  created_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (enterprise_id, scope_id, source_id, target_id);

CREATE INDEX memory_links_by_target
  ON memory_links (enterprise_id, scope_id, target_id);

-- Graph entities; node_type is assign-once (enforced by the adapter).
CREATE TABLE graph_nodes (
  enterprise_id STRING(256) NOT NULL,
  scope_id STRING(256) NOT NULL,
  node_id STRING(128) NOT NULL,
  label STRING(MAX) NOT NULL,
  node_type STRING(64),
  properties JSON NOT NULL,
  created_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
  updated_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (enterprise_id, scope_id, node_id);

CREATE INDEX graph_nodes_by_label
  ON graph_nodes (enterprise_id, scope_id, label);

CREATE INDEX graph_nodes_by_node_type
  ON graph_nodes (enterprise_id, scope_id, node_type);

-- Relationships between nodes, each valid over a window of valid time.
CREATE TABLE graph_edges (
  enterprise_id STRING(256) NOT NULL,
  scope_id STRING(256) NOT NULL,
  edge_id STRING(128) NOT NULL,
  source STRING(128) NOT NULL,
  relation STRING(64) NOT NULL,
  target STRING(128) NOT NULL,
  properties JSON NOT NULL,
  valid_at TIMESTAMP,
  invalid_at TIMESTAMP,
  created_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
  updated_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
  retired_at TIMESTAMP,
  supersedes STRING(128),
  superseded_by STRING(128),
) PRIMARY KEY (enterprise_id, scope_id, edge_id);

CREATE INDEX graph_edges_by_source
  ON graph_edges (enterprise_id, scope_id, source, relation);

CREATE INDEX graph_edges_by_target
  ON graph_edges (enterprise_id, scope_id, target, relation);

-- The rendered turns of a formation that wrote memory.
CREATE TABLE execution_log_steps (
  enterprise_id STRING(256) NOT NULL,
  scope_id STRING(256) NOT NULL,
  step_id STRING(128) NOT NULL,
  tool_input STRING(MAX) NOT NULL,
  metadata JSON NOT NULL,
  created_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (enterprise_id, scope_id, step_id);

-- Formation keys, committed in the same transaction as the memory they describe.
CREATE TABLE formation_keys (
  enterprise_id STRING(256) NOT NULL,
  scope_id STRING(256) NOT NULL,
  formation_key STRING(256) NOT NULL,
  fingerprint STRING(256) NOT NULL,
  receipt_json STRING(MAX) NOT NULL,
  committed_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (enterprise_id, scope_id, formation_key);

-- The scope registry: an agent workspace or a subject scope, registered by its
-- first write (or explicitly). Destroying a scope deletes this row and every row
-- of the scope in the tables above, in one transaction.
CREATE TABLE scopes (
  enterprise_id STRING(256) NOT NULL,
  scope_id STRING(256) NOT NULL,
  kind STRING(16) NOT NULL,
  created_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
  created_by STRING(512) NOT NULL,
) PRIMARY KEY (enterprise_id, scope_id);
