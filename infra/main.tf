provider "google" {
  project = var.project_id
  region  = var.region
}

locals {
  # Every API the deployment uses. No secrets are deployed (API keys and credentials are
  # hashed into Firestore by the app), so Secret Manager is not needed.
  required_services = toset([
    "aiplatform.googleapis.com",           # Vertex AI: extraction model, embeddings
    "artifactregistry.googleapis.com",     # function images
    "cloudbuild.googleapis.com",           # builds of the functions
    "cloudfunctions.googleapis.com",       # HTTP functions (gen2)
    "cloudresourcemanager.googleapis.com", # project IAM grants made by Terraform
    "cloudscheduler.googleapis.com",       # usage-rollup, lifecycle
    "cloudtasks.googleapis.com",           # long formations -> form-worker
    "firestore.googleapis.com",            # control documents
    "iam.googleapis.com",                  # service accounts of the functions
    "logging.googleapis.com",              # function and build logs
    "run.googleapis.com",                  # gen2 functions run on Cloud Run
    "spanner.googleapis.com",              # the memory store
    "storage.googleapis.com",              # function deploy artifacts
  ])

  vertex_location = var.vertex_location == "" ? var.region : var.vertex_location
}

resource "google_project_service" "required" {
  for_each = local.required_services

  project = var.project_id
  service = each.value

  # Turning an API off on destroy would break anything else in the project using it.
  disable_on_destroy = false
}
