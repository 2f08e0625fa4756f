-- The memory card (issue 17): a scope's claims newest first, a page at a time.
--
-- Applied after claims.sql in production (Terraform's ddl list is append-only once
-- deployed, see infra/spanner.tf) and after schema.sql on the emulator. The index
-- is built from the rows already stored.

-- a scope's claims by created_at, newest first, then id (the card's order and its
-- page key); the filter's columns ride along so a page needs no base-table read to
-- skip a row
CREATE INDEX memory_records_by_created_at
  ON memory_records (enterprise_id, scope_id, created_at DESC, id)
  STORING (status, type, sensitivity, applies_to);
