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

# The nightly lifecycle pass (functions/lifecycle, entry point `lifecycle`): every scope of every
# enterprise, resuming where the last run stopped. A run that runs out of time answers 503 after
# saving its cursor, so each retry goes on with the walk (retry_config: up to 5 attempts a night).
# var.enable_lifecycle_job = false removes the function and this job.
resource "google_cloud_scheduler_job" "lifecycle" {
  count = var.enable_lifecycle_job ? 1 : 0

  project          = var.project_id
  region           = var.region
  name             = "${var.name_prefix}lifecycle"
  description      = "The nightly lifecycle pass: expire, promote and decay claims, recompile briefs."
  schedule         = var.lifecycle_schedule
  time_zone        = var.scheduler_time_zone
  attempt_deadline = "${local.functions["lifecycle"].timeout}s" # 1800 s, the maximum for HTTP targets

  retry_config {
    retry_count          = 4
    min_backoff_duration = "60s"
    max_backoff_duration = "600s"
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
