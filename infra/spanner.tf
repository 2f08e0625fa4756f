# The memory store: one Spanner instance and database whose DDL comes from the same files the
# tests apply to the emulator (shared/jennah/adapters/spanner/schema.sql), followed by the
# production-only DDL the emulator cannot run (vector_index.sql: the ANN vector index over the
# record embeddings). The full-text SEARCH INDEX is in schema.sql (the emulator runs it too).
#
# The provider applies statements appended to `ddl` in place, but any other change to the list
# replaces the database; deletion_protection makes such a plan fail instead. So the list is
# append-only once deployed: change a table with a new ALTER statement at the END OF THE LIST.
# Because vector_index.sql follows schema.sql here, a statement appended to schema.sql after the
# first deploy lands before the vector index, which is not an append: new DDL then has to go
# after it (a further file appended to ddl_files below, also applied by the test tooling).

module "spanner_ddl" {
  source = "./modules/spanner-ddl"

  ddl_files = [
    "${path.module}/../shared/jennah/adapters/spanner/schema.sql",
    "${path.module}/../shared/jennah/adapters/spanner/vector_index.sql",
    "${path.module}/../shared/jennah/adapters/spanner/text_ngrams.sql",
    "${path.module}/../shared/jennah/adapters/spanner/claims.sql",
    "${path.module}/../shared/jennah/adapters/spanner/card.sql",
    "${path.module}/../shared/jennah/adapters/spanner/suppressions.sql",
    "${path.module}/../shared/jennah/adapters/spanner/keyed.sql",
  ]
}

resource "google_spanner_instance" "memory" {
  name             = var.spanner_instance_name
  config           = var.spanner_instance_config
  display_name     = "Jennah Memory"
  processing_units = var.spanner_processing_units
  labels           = var.labels

  depends_on = [google_project_service.required]
}

resource "google_spanner_database" "memory" {
  #checkov:skip=CKV_GCP_93:Spanner encrypts at rest with Google-managed keys; a customer-managed KMS key is a per-enterprise choice not made in this skeleton.
  instance            = google_spanner_instance.memory.name
  name                = var.spanner_database_name
  database_dialect    = "GOOGLE_STANDARD_SQL"
  ddl                 = module.spanner_ddl.statements
  deletion_protection = var.deletion_protection
  # Server-side drop protection: refuses DROP DATABASE from any client, not only Terraform.
  enable_drop_protection = var.deletion_protection
}
