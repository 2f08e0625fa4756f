output "name" {
  description = "The function's name."
  value       = google_cloudfunctions2_function.function.name
}

output "uri" {
  description = "The function's Cloud Run URL (https://NAME-HASH-REGION.a.run.app): the target and OIDC audience for Cloud Tasks and Cloud Scheduler."
  value       = google_cloudfunctions2_function.function.service_config[0].uri
}

output "url" {
  description = "The function's cloudfunctions.net URL (https://REGION-PROJECT.cloudfunctions.net/NAME)."
  value       = google_cloudfunctions2_function.function.url
}

output "service_account_email" {
  description = "The function's runtime service account."
  value       = google_service_account.runtime.email
}

output "service_account_member" {
  description = "The function's runtime service account as an IAM member (serviceAccount:EMAIL)."
  value       = google_service_account.runtime.member
}
