# Control documents: enterprises, users, API keys (hashes only) and role bindings
# (jennah.adapters.firestore), later vocabularies and formation operations.
resource "google_firestore_database" "control" {
  project                           = var.project_id
  name                              = var.firestore_database_name
  location_id                       = var.firestore_location
  type                              = "FIRESTORE_NATIVE"
  concurrency_mode                  = "OPTIMISTIC"
  point_in_time_recovery_enablement = "POINT_IN_TIME_RECOVERY_ENABLED"
  delete_protection_state           = "DELETE_PROTECTION_ENABLED"
  deletion_policy                   = "ABANDON"

  depends_on = [google_project_service.required]
}
