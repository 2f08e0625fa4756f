-- Jennah Memory on Cloud Spanner (GoogleSQL dialect): the ONE schema source.
--
-- Applied as-is by the test tooling (tests/support/spanner_emulator.py) and, for
-- Terraform's google_spanner_database.ddl, read through
-- jennah.adapters.spanner.schema.ddl_statements(). Statements are separated by
-- ';' and '--' starts a comment (neither appears inside a literal). DDL the
-- emulator cannot run (the ANN vector index) lives apart, in vector_index.sql.
--
-- Every memory table is keyed by (enterprise_id, scope_id, ...): tenancy is the
-- key prefix, so every row of one scope is contiguous and no key can collide
-- across scopes. The usage and billing tables at the end are keyed by
-- enterprise_id only (their scope column is `spent_in_scope`): usage outlives
-- the scopes it was spent on, so destroying a scope never reaches them.
-- Table and column names match the SQLite adapter's.

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

-- Formation usage and billing (jennah.adapters.spanner.ledger). These tables are
-- keyed by enterprise, NOT by (enterprise_id, scope_id): usage outlives the
-- scopes it was spent on, so the scope a formation spent its units in is plain
-- data (spent_in_scope) and destroying a scope never touches them. Usage is kept
-- 400 days (the usage report's reach); the deletion policy removes it after 401.

-- One row per formation that reached the model (zero tokens: abandoned before a
-- call returned; it counts 1 unit and is left out of token reports).
CREATE TABLE usage_records (
  enterprise_id STRING(256) NOT NULL,
  recorded_at TIMESTAMP NOT NULL,
  formation_id STRING(128) NOT NULL,
  spent_in_scope STRING(256) NOT NULL,
  caller STRING(512) NOT NULL,
  model STRING(256) NOT NULL,
  region STRING(64) NOT NULL,
  input_tokens INT64 NOT NULL,
  output_tokens INT64 NOT NULL,
  units INT64 NOT NULL,
  formation_key STRING(256),
) PRIMARY KEY (enterprise_id, recorded_at, formation_id),
  ROW DELETION POLICY (OLDER_THAN(recorded_at, INTERVAL 401 DAY));

-- a formation is recorded once
CREATE UNIQUE INDEX usage_records_by_formation
  ON usage_records (enterprise_id, formation_id);

-- the rollup folds every enterprise's rows by time (one index write per formation)
CREATE INDEX usage_records_by_time
  ON usage_records (recorded_at);

-- Per-hour aggregates of the rows that reported tokens, below the rollup watermark,
-- at each grouping (grouped_by: '' the totals, one of scope, caller, model, region,
-- or all four); the dimensions a grouping does not keep are ''.
CREATE TABLE usage_hours (
  enterprise_id STRING(256) NOT NULL,
  grouped_by STRING(16) NOT NULL,
  hour TIMESTAMP NOT NULL,
  spent_in_scope STRING(256) NOT NULL,
  caller STRING(512) NOT NULL,
  model STRING(256) NOT NULL,
  region STRING(64) NOT NULL,
  formations INT64 NOT NULL,
  input_tokens INT64 NOT NULL,
  output_tokens INT64 NOT NULL,
  units INT64 NOT NULL,
) PRIMARY KEY (enterprise_id, grouped_by, hour, spent_in_scope, caller, model, region),
  ROW DELETION POLICY (OLDER_THAN(hour, INTERVAL 401 DAY));

-- Each enterprise's usage per UTC day (day = its midnight): what admission counts.
CREATE TABLE usage_days (
  enterprise_id STRING(256) NOT NULL,
  day TIMESTAMP NOT NULL,
  formations INT64 NOT NULL,
  units INT64 NOT NULL,
  input_tokens INT64 NOT NULL,
  output_tokens INT64 NOT NULL,
) PRIMARY KEY (enterprise_id, day),
  ROW DELETION POLICY (OLDER_THAN(day, INTERVAL 401 DAY));

-- Formations admitted and not yet settled; one past expires_at no longer counts.
CREATE TABLE formation_reservations (
  enterprise_id STRING(256) NOT NULL,
  formation_id STRING(128) NOT NULL,
  reserved_at TIMESTAMP NOT NULL,
  expires_at TIMESTAMP NOT NULL,
  units INT64 NOT NULL,
  output_tokens INT64 NOT NULL,
) PRIMARY KEY (enterprise_id, formation_id);

-- Billing settings (control data, read by admission in its own transaction).
CREATE TABLE billing_settings (
  enterprise_id STRING(256) NOT NULL,
  plan STRING(32) NOT NULL,
  billable BOOL NOT NULL,
  overage_multiple FLOAT64 NOT NULL,
  trial_started_at TIMESTAMP,
  trial_ends_at TIMESTAMP,
  updated_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (enterprise_id);

-- The rollup watermark: every row recorded before it is in usage_hours.
CREATE TABLE usage_rollup_state (
  name STRING(64) NOT NULL,
  watermark TIMESTAMP NOT NULL,
) PRIMARY KEY (name);
