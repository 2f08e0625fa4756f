-- Keyed memory (issue 18): an agent's notebook of entries named by subject, their term
-- index for recall, and their symmetric links (see jennah.domain.keyed for why entries
-- are not memory records).
--
-- Applied after claims.sql in production (Terraform's ddl list is append-only once
-- deployed, see infra/spanner.tf) and after schema.sql on the emulator.

CREATE TABLE keyed_memories (
  enterprise_id STRING(256) NOT NULL,
  scope_id STRING(256) NOT NULL,
  key STRING(100) NOT NULL,
  content STRING(MAX) NOT NULL,
  version INT64 NOT NULL,
  token_count INT64 NOT NULL,
  created_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
  updated_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (enterprise_id, scope_id, key);

CREATE INDEX keyed_memories_by_update
  ON keyed_memories (enterprise_id, scope_id, updated_at DESC, key);

-- the words of each entry's key and content (jennah.domain.keyed.terms), with the entry's
-- update time, so recall ranks from the index alone
CREATE TABLE keyed_memory_terms (
  enterprise_id STRING(256) NOT NULL,
  scope_id STRING(256) NOT NULL,
  key STRING(100) NOT NULL,
  term STRING(MAX) NOT NULL,
  updated_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (enterprise_id, scope_id, key, term);

CREATE INDEX keyed_memory_terms_by_term
  ON keyed_memory_terms (enterprise_id, scope_id, term, updated_at DESC, key);

-- one row per linked pair: source_key < target_key (a link is symmetric)
CREATE TABLE keyed_memory_links (
  enterprise_id STRING(256) NOT NULL,
  scope_id STRING(256) NOT NULL,
  source_key STRING(100) NOT NULL,
  target_key STRING(100) NOT NULL,
  created_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (enterprise_id, scope_id, source_key, target_key);

CREATE INDEX keyed_memory_links_by_target
  ON keyed_memory_links (enterprise_id, scope_id, target_key);
