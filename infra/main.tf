provider "google" {
  project = var.project_id
  region  = var.region
}

locals {
  # Every API the deployment uses; later issues add the resources that use them.
  required_services = toset([
    "aiplatform.googleapis.com",       # Vertex AI: extraction model, embeddings
    "artifactregistry.googleapis.com", # function images
    "cloudbuild.googleapis.com",       # builds of the functions
    "cloudfunctions.googleapis.com",   # HTTP functions (gen2)
    "cloudscheduler.googleapis.com",   # usage-rollup, lifecycle
    "cloudtasks.googleapis.com",       # long formations -> form-worker
    "firestore.googleapis.com",        # control documents
    "iam.googleapis.com",              # service accounts of the functions
    "run.googleapis.com",              # gen2 functions run on Cloud Run
    "spanner.googleapis.com",          # the memory store
  ])
}

resource "google_project_service" "required" {
  for_each = local.required_services

  project = var.project_id
  service = each.value

  # Turning an API off on destroy would break anything else in the project using it.
  disable_on_destroy = false
}
