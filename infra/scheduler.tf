# Scheduled work: Cloud Scheduler POSTs an empty JSON object ({}) to a private function with an
# OIDC token of the scheduler service account, the only invoker of those functions. A non-2xx
# answer is retried (retry_config); a run must be safe to repeat or overlap a retry.

resource "google_service_account" "scheduler" {
  project      = var.project_id
  account_id   = "${var.name_prefix}scheduler"
  display_name = "Jennah scheduled jobs"
  description  = "OIDC identity of the Cloud Scheduler jobs; may invoke usage-rollup (and lifecycle) only."

  depends_on = [google_project_service.required]
}

resource "google_cloud_scheduler_job" "usage_rollup" {
  project          = var.project_id
  region           = var.region
  name             = "${var.name_prefix}usage-rollup"
  description      = "Fold new usage records into the hourly and daily aggregates."
  schedule         = var.usage_rollup_schedule
  time_zone        = var.scheduler_time_zone
  attempt_deadline = "${local.functions["usage-rollup"].timeout + 20}s"

  retry_config {
    retry_count          = 3
    min_backoff_duration = "30s"
    max_backoff_duration = "300s"
  }

  http_target {
    http_method = "POST"
    uri         = module.backend["usage-rollup"].uri
    body        = base64encode("{}")
    headers     = { "Content-Type" = "application/json" }

    oidc_token {
      service_account_email = google_service_account.scheduler.email
      audience              = module.backend["usage-rollup"].uri
    }
  }
}

# The nightly lifecycle pass. Its function (functions/lifecycle, entry point `lifecycle`) is not
# written yet: with var.enable_lifecycle_job = false (the default) neither the function (see
# local.function_catalog) nor this job exists. Set it to true once build/functions/lifecycle.zip
# is built.
resource "google_cloud_scheduler_job" "lifecycle" {
  count = var.enable_lifecycle_job ? 1 : 0

  project          = var.project_id
  region           = var.region
  name             = "${var.name_prefix}lifecycle"
  description      = "The nightly lifecycle pass over memory (decay, expiry, consolidation)."
  schedule         = var.lifecycle_schedule
  time_zone        = var.scheduler_time_zone
  attempt_deadline = "1800s" # the maximum for HTTP targets, the function's timeout

  retry_config {
    retry_count          = 2
    min_backoff_duration = "300s"
    max_backoff_duration = "1800s"
  }

  http_target {
    http_method = "POST"
    uri         = module.backend["lifecycle"].uri
    body        = base64encode("{}")
    headers     = { "Content-Type" = "application/json" }

    oidc_token {
      service_account_email = google_service_account.scheduler.email
      audience              = module.backend["lifecycle"].uri
    }
  }
}
