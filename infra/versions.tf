terraform {
  required_version = ">= 1.5"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 6.0"
    }
  }

  # State lives in a GCS bucket named at init time (Cloud Build passes
  # _TF_STATE_BUCKET): terraform init -backend-config="bucket=BUCKET"
  backend "gcs" {
    prefix = "jennah-memory"
  }
}
