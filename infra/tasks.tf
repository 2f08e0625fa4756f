# Long formations: the `form` function enqueues one HTTP task per formation on this queue;
# Cloud Tasks POSTs it to the private `form-worker` function with an OIDC token of the
# tasks-invoker service account (jennah.ports.tasks).
#
# The 30-minute dispatch deadline is set per task by the app (Task.dispatch_deadline = 1800 s,
# the maximum for HTTP targets): the queue resource has no such field. The worker's timeout is
# 1800 s to match.
resource "google_cloud_tasks_queue" "formations" {
  project  = var.project_id
  name     = var.formation_queue_name
  location = var.region

  rate_limits {
    # Formations running at once; the form-worker has as many instances, one formation each.
    max_concurrent_dispatches = var.formation_max_concurrency
    max_dispatches_per_second = var.formation_dispatches_per_second
  }

  # A failed attempt (non-2xx, or no answer by the dispatch deadline) is retried after 10 s,
  # doubling up to 300 s. Cloud Tasks gives up once BOTH limits are reached: 5 attempts made and
  # an hour passed since the first. So the worker answers 2xx for a formation that failed for
  # good (the failure is recorded in its operation) and non-2xx only for what a retry can fix.
  # Delivery is at-least-once: the worker is idempotent per operation.
  retry_config {
    max_attempts       = 5
    min_backoff        = "10s"
    max_backoff        = "300s"
    max_doublings      = 5
    max_retry_duration = "3600s"
  }

  # Log every dispatch attempt and its outcome (volume is one entry per formation attempt).
  stackdriver_logging_config {
    sampling_ratio = 1.0
  }

  depends_on = [google_project_service.required]
}

# The identity Cloud Tasks signs the worker's OIDC token with; the only invoker of form-worker.
resource "google_service_account" "tasks_invoker" {
  project      = var.project_id
  account_id   = "${var.name_prefix}tasks-invoker"
  display_name = "Jennah formation tasks"
  description  = "OIDC identity of Cloud Tasks formation tasks; may invoke the form-worker function only."

  depends_on = [google_project_service.required]
}

# `form` enqueues (on this queue only) ...
resource "google_cloud_tasks_queue_iam_member" "form_enqueues" {
  project  = var.project_id
  location = google_cloud_tasks_queue.formations.location
  name     = google_cloud_tasks_queue.formations.name
  role     = "roles/cloudtasks.enqueuer"
  member   = module.api["form"].service_account_member
}

# ... and names the tasks-invoker account in each task's oidc_token, which Cloud Tasks only
# accepts from a caller that may act as that account (iam.serviceAccounts.actAs).
resource "google_service_account_iam_member" "form_acts_as_tasks_invoker" {
  service_account_id = google_service_account.tasks_invoker.name
  role               = "roles/iam.serviceAccountUser"
  member             = module.api["form"].service_account_member
}
