-- Suppression rules (issue 17, design §10 "Forgetting a claim for good"): what a
-- forgotten claim leaves behind so formation never learns it back, by id.
--
-- Applied after claims.sql in production (Terraform's ddl list is append-only once
-- deployed, see infra/spanner.tf) and on the emulator. A new table only: a database
-- created before it upgrades in place, with no suppression rules.
CREATE TABLE suppressions (
  enterprise_id STRING(256) NOT NULL,
  scope_id STRING(256) NOT NULL,
  id STRING(64) NOT NULL,
  memory_id STRING(128) NOT NULL,
  about STRING(MAX) NOT NULL,
  summary STRING(MAX) NOT NULL,
  `text` STRING(MAX) NOT NULL,
  -- the forgotten body's unit-length 384-d embedding
  embedding ARRAY<FLOAT32>,
  created_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
  created_by STRING(256) NOT NULL,
) PRIMARY KEY (enterprise_id, scope_id, id);
