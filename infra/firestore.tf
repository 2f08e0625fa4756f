# Control documents: enterprises, users, API keys (hashes only), role bindings, memory
# vocabularies and formation operations (jennah.adapters.firestore).
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

# Formation operations expire. Each document of the `operations` collection group
# (enterprises/{enterpriseId}/operations/{operationId}, jennah.adapters.firestore.operations)
# carries `expireTime`, a timestamp the app sets when it creates the operation, well past the
# 30-minute formation ceiling: its retention (7 days by default) is the app's decision, not
# this policy's. Firestore deletes a document typically within 24 hours after its expireTime
# passes; until then the app treats an expired operation as gone (and its `sweep` deletes
# expired ones on demand).
resource "google_firestore_field" "operation_expiry" {
  project    = var.project_id
  database   = google_firestore_database.control.name
  collection = "operations"
  field      = "expireTime"

  # The TTL policy on the field.
  ttl_config {}

  # Only the index the app's sweep needs (a collection-group query, expireTime <= now); the
  # automatic collection-scoped indexes on an ever-increasing timestamp would only add write
  # load.
  index_config {
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION_GROUP"
    }
  }
}

# Role bindings are listed page by page in (principal, role) order, optionally of one
# principal (jennah.adapters.firestore.identity.list_bindings): a query ordering by two
# fields needs this composite index. The other lists order by one field (API keys by
# keyId; operations by createTime and the document id), which the automatic single-field
# indexes serve.
resource "google_firestore_index" "role_bindings_by_principal_and_role" {
  project     = var.project_id
  database    = google_firestore_database.control.name
  collection  = "roleBindings"
  query_scope = "COLLECTION"

  fields {
    field_path = "principal"
    order      = "ASCENDING"
  }
  fields {
    field_path = "role"
    order      = "ASCENDING"
  }
}

# What a restart re-delivers (jennah.adapters.firestore.operations `unfinished`): two
# collection-group queries over `operations`, state == "QUEUED", and state == "RUNNING" with
# leaseExpiresAt <= now (a worker that died holding its lease).
resource "google_firestore_field" "operation_state" {
  project    = var.project_id
  database   = google_firestore_database.control.name
  collection = "operations"
  field      = "state"

  index_config {
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION_GROUP"
    }
  }
}

resource "google_firestore_index" "operation_expired_leases" {
  project     = var.project_id
  database    = google_firestore_database.control.name
  collection  = "operations"
  query_scope = "COLLECTION_GROUP"

  fields {
    field_path = "state"
    order      = "ASCENDING"
  }
  fields {
    field_path = "leaseExpiresAt"
    order      = "ASCENDING"
  }
}
