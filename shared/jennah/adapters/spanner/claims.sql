-- Claims (issue 16): claim links, front-matter extensions, the scope's time zone,
-- compiled briefs and the dated change log.
--
-- Applied after text_ngrams.sql in production (Terraform's ddl list is append-only
-- once deployed, see infra/spanner.tf) and after schema.sql on the emulator. Every
-- added column is NOT NULL with a default, so the rows already stored read as "no
-- links, no extensions, nothing to enrich, time zone UTC".

-- entity node ids the claim concerns, and related claims' ids (ARRAY, not JSON: the
-- client reads a JSON array back as an empty dict holding the list privately)
ALTER TABLE memory_records ADD COLUMN applies_to ARRAY<STRING(MAX)> NOT NULL
  DEFAULT (ARRAY<STRING>[]);

ALTER TABLE memory_records ADD COLUMN related ARRAY<STRING(MAX)> NOT NULL
  DEFAULT (ARRAY<STRING>[]);

ALTER TABLE memory_records ADD COLUMN needs_enrichment BOOL NOT NULL DEFAULT (FALSE);

-- front-matter keys the service does not know: key -> the value's JSON text
ALTER TABLE memory_records ADD COLUMN extensions JSON NOT NULL DEFAULT (JSON '{}');

-- the IANA zone the scope's calendar is judged in
ALTER TABLE scopes ADD COLUMN time_zone STRING(64) NOT NULL DEFAULT ('UTC');

-- The brief last compiled for a scope, per variant (full, shared), replaced whole.
-- expiries: {memory id: validUntil as RFC 3339}.
CREATE TABLE briefs (
  enterprise_id STRING(256) NOT NULL,
  scope_id STRING(256) NOT NULL,
  variant STRING(16) NOT NULL,
  `text` STRING(MAX) NOT NULL,
  token_count INT64 NOT NULL,
  expiries JSON NOT NULL,
  compiled_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (enterprise_id, scope_id, variant);

-- The scope's dated change log (appended by lifecycle passes), newest first by key;
-- `day` is the scope-local calendar date.
CREATE TABLE change_log (
  enterprise_id STRING(256) NOT NULL,
  scope_id STRING(256) NOT NULL,
  recorded_at TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
  id STRING(128) NOT NULL,
  `change` STRING(32) NOT NULL,
  `day` STRING(10) NOT NULL,
  from_value STRING(MAX) NOT NULL,
  to_value STRING(MAX) NOT NULL,
) PRIMARY KEY (enterprise_id, scope_id, recorded_at DESC, id, `change`);
