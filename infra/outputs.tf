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
