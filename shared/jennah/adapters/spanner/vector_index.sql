-- PRODUCTION ONLY: Cloud Spanner DDL the local emulator cannot run.
--
-- The emulator's DDL parser has no CREATE VECTOR INDEX ("Encountered 'VECTOR'
-- while parsing: create_statement"), so the tests search with exact
-- COSINE_DISTANCE over memory_records.embedding (the store adapter does so in
-- every environment) and this file is applied only to real Spanner, after
-- schema.sql (read through
-- jennah.adapters.spanner.schema.production_only_statements()).
--
-- Spanner recommends building a vector index after most rows with embeddings
-- are written; queries use it only through APPROX_COSINE_DISTANCE, so the
-- exact search keeps working with or without it.

-- ANN index over the unit-length 384-d record embeddings (ScaNN, two-level
-- tree). embedding is nullable, so the index must filter NULLs; the validity
-- columns are stored so the validity predicate is evaluated in the index.
CREATE VECTOR INDEX memory_records_embedding_ann
  ON memory_records (embedding)
  STORING (valid_at, invalid_at, retired_at)
  WHERE embedding IS NOT NULL
  OPTIONS (distance_type = 'COSINE', tree_depth = 2, num_leaves = 1000);
