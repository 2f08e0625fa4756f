# One Cloud Functions (2nd gen) HTTP function with its own runtime service account and only
# the grants it needs: a role on the Spanner database, datastore.user limited to the control
# documents' Firestore database, aiplatform.user when it calls Vertex AI, and who may invoke it.

locals {
  # A changed artifact gets a new object name, and so a new build and revision; an unchanged
  # one keeps its name and nothing is redeployed (scripts/package must build reproducible zips).
  source_object = "functions/${var.name}/${filemd5(var.source_zip)}.zip"
}

resource "google_service_account" "runtime" {
  project      = var.project_id
  account_id   = var.name
  display_name = "Jennah function ${var.name}"
  description  = "Runtime identity of the ${var.name} Cloud Function: ${var.description}"
}

resource "google_storage_bucket_object" "source" {
  name         = local.source_object
  bucket       = var.source_bucket
  source       = var.source_zip
  content_type = "application/zip"
}

resource "google_spanner_database_iam_member" "runtime" {
  count = var.spanner_role == null ? 0 : 1

  project  = var.project_id
  instance = var.spanner_instance
  database = var.spanner_database
  role     = var.spanner_role
  member   = google_service_account.runtime.member
}

# Firestore roles are project roles; the condition limits this one to the control database.
resource "google_project_iam_member" "firestore" {
  count = var.firestore_access ? 1 : 0

  project = var.project_id
  role    = "roles/datastore.user"
  member  = google_service_account.runtime.member

  condition {
    title       = "only-${var.firestore_database == "(default)" ? "default" : var.firestore_database}-database"
    description = "Firestore access limited to the Jennah control documents database."
    expression  = "resource.name == \"projects/${var.project_id}/databases/${var.firestore_database}\""
  }
}

resource "google_project_iam_member" "vertex_ai" {
  count = var.vertex_ai ? 1 : 0

  project = var.project_id
  role    = "roles/aiplatform.user"
  member  = google_service_account.runtime.member
}

resource "google_cloudfunctions2_function" "function" {
  #checkov:skip=CKV_GCP_124:Public API functions must take internet traffic (ALLOW_ALL) and authenticate every caller in the app; private ones get var.private_ingress (internal only by default) and IAM.
  project     = var.project_id
  location    = var.region
  name        = var.name
  description = var.description
  labels      = var.labels

  build_config {
    runtime           = var.runtime
    entry_point       = var.entry_point
    service_account   = var.build_service_account_id
    docker_repository = var.docker_repository

    source {
      storage_source {
        bucket = var.source_bucket
        object = google_storage_bucket_object.source.name
      }
    }
  }

  service_config {
    available_memory                 = var.memory
    available_cpu                    = var.cpu
    timeout_seconds                  = var.timeout_seconds
    min_instance_count               = var.min_instances
    max_instance_count               = var.max_instances
    max_instance_request_concurrency = var.concurrency
    ingress_settings                 = var.public ? "ALLOW_ALL" : var.private_ingress
    all_traffic_on_latest_revision   = true
    service_account_email            = google_service_account.runtime.email
    environment_variables            = var.environment
  }

  # A new revision must start with its grants in place.
  depends_on = [
    google_spanner_database_iam_member.runtime,
    google_project_iam_member.firestore,
    google_project_iam_member.vertex_ai,
  ]
}

# Invocation of a 2nd gen function is Cloud Run's run.invoker on the function's service.
resource "google_cloud_run_v2_service_iam_member" "public" {
  count = var.public ? 1 : 0

  project  = var.project_id
  location = var.region
  name     = google_cloudfunctions2_function.function.name # its Cloud Run service has the same name
  role     = "roles/run.invoker"
  # The API is public: every request carries a Jennah credential (API key, user token or a
  # Google-signed ID token) that the function itself verifies, so Cloud Run must not gate it.
  member = "allUsers"
}

resource "google_cloud_run_v2_service_iam_member" "invoker" {
  for_each = { for key, member in var.invokers : key => member if !var.public }

  project  = var.project_id
  location = var.region
  name     = google_cloudfunctions2_function.function.name # its Cloud Run service has the same name
  role     = "roles/run.invoker"
  member   = each.value
}
