output "spanner_instance" {
  description = "Cloud Spanner instance id (JENNAH_SPANNER_INSTANCE)."
  value       = google_spanner_instance.memory.name
}

output "spanner_database" {
  description = "Cloud Spanner database id (JENNAH_SPANNER_DATABASE)."
  value       = google_spanner_database.memory.name
}

output "enabled_services" {
  description = "APIs enabled for the deployment."
  value       = sort([for service in google_project_service.required : service.service])
}

output "firestore_database" {
  description = "The Firestore database of control documents (JENNAH_FIRESTORE_DATABASE)."
  value       = google_firestore_database.control.name
}

output "function_urls" {
  description = "Every function's Cloud Run URL, by function (folder) name."
  value       = merge({ for name, fn in module.api : name => fn.uri }, { for name, fn in module.backend : name => fn.uri })

  precondition {
    condition     = alltrue([for name in keys(var.function_overrides) : contains(keys(local.function_catalog), name)])
    error_message = "function_overrides names a function that does not exist; the functions are: ${join(", ", sort(keys(local.function_catalog)))}."
  }
}

output "api_endpoints" {
  description = "The public API: each public function's URL, by function name. Each serves its own routes (see local.function_catalog) under /v1/..., e.g. POST {api_endpoints.query}/v1/agents/AGENT/memory:query."
  value       = { for name, fn in module.api : name => fn.uri }
}

output "api_base" {
  description = "The cloudfunctions.net base of the public functions: function NAME answers at {api_base}/NAME/v1/... . One base URL for every route needs a load balancer or API gateway in front (not deployed here)."
  value       = "https://${var.region}-${var.project_id}.cloudfunctions.net"
}

output "formation_queue" {
  description = "The Cloud Tasks queue of long formations (JENNAH_TASKS_QUEUE), as projects/P/locations/L/queues/Q."
  value       = google_cloud_tasks_queue.formations.id
}

output "function_service_accounts" {
  description = "Each function's runtime service account, by function name."
  value       = merge({ for name, fn in module.api : name => fn.service_account_email }, { for name, fn in module.backend : name => fn.service_account_email })
}

output "tasks_service_account" {
  description = "The service account whose OIDC token Cloud Tasks attaches to formation tasks (JENNAH_TASKS_SERVICE_ACCOUNT)."
  value       = google_service_account.tasks_invoker.email
}

output "scheduler_service_account" {
  description = "The service account Cloud Scheduler jobs invoke the private functions as."
  value       = google_service_account.scheduler.email
}

output "function_sources_bucket" {
  description = "The bucket of the functions' deploy artifacts."
  value       = google_storage_bucket.function_sources.name
}

output "console_url" {
  description = "The memory console (functions/console) on the cloudfunctions.net origin of the API functions, so its pages call them on their own origin."
  value       = "https://${var.region}-${var.project_id}.cloudfunctions.net/${var.name_prefix}console/"
}
