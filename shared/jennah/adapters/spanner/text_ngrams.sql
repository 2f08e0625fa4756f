-- Typo-tolerant word search (issue 15): letter trigrams of the record text.
--
-- Applied after vector_index.sql in production (Terraform's ddl list is
-- append-only once deployed, see infra/spanner.tf) and after schema.sql on the
-- emulator, which runs it. SEARCH_NGRAMS / SCORE_NGRAMS read this column; the
-- emulator runs them on TOKENIZE_NGRAMS (not on TOKENIZE_SUBSTRING, where it
-- finds nothing), so both use TOKENIZE_NGRAMS of the lowercased text.

ALTER TABLE memory_records ADD COLUMN text_ngrams TOKENLIST
  AS (TOKENIZE_NGRAMS(LOWER(`text`), ngram_size_min=>3, ngram_size_max=>3)) HIDDEN;

CREATE SEARCH INDEX memory_records_ngram_search
  ON memory_records (text_ngrams)
  PARTITION BY enterprise_id, scope_id;
