variable "project_id" {
  description = "Project of the function, its service account and its role grants."
  type        = string
}

variable "region" {
  description = "Region of the function."
  type        = string
}

variable "name" {
  description = "Function name; also its runtime service account id."
  type        = string
}

variable "description" {
  description = "What the function serves (shown in the console)."
  type        = string
}

variable "entry_point" {
  description = "The Python function functions-framework runs (main.py in the artifact)."
  type        = string
}

variable "runtime" {
  description = "Cloud Functions runtime, e.g. python311."
  type        = string
}

variable "source_zip" {
  description = "Path of the deploy artifact (a zip with main.py, requirements and the jennah package)."
  type        = string
}

variable "source_bucket" {
  description = "Bucket the artifact is uploaded to."
  type        = string
}

variable "build_service_account_id" {
  description = "Fully-qualified id (projects/P/serviceAccounts/EMAIL) of the service account Cloud Build uses to build the function."
  type        = string
}

variable "docker_repository" {
  description = "Artifact Registry repository id (projects/P/locations/L/repositories/R) the built image is pushed to."
  type        = string
}

variable "memory" {
  description = "Memory of one instance, e.g. 512Mi or 2Gi."
  type        = string
}

variable "cpu" {
  description = "vCPUs of one instance, e.g. \"1\" (needed for more than one concurrent request)."
  type        = string
}

variable "timeout_seconds" {
  description = "Request timeout in seconds (HTTP functions: at most 3600)."
  type        = number
}

variable "min_instances" {
  description = "Instances kept warm."
  type        = number
}

variable "max_instances" {
  description = "Upper bound on instances."
  type        = number
}

variable "concurrency" {
  description = "Concurrent requests per instance."
  type        = number
}

variable "public" {
  description = "true: anyone may call it (the function authenticates the caller itself); false: only var.invokers may."
  type        = bool
}

variable "private_ingress" {
  description = "Ingress setting of a private function (a public one is ALLOW_ALL)."
  type        = string
}

variable "invokers" {
  description = "IAM members given roles/run.invoker on a private function, by a fixed key (the keys must be known at plan time; the members may not be). Ignored for a public function."
  type        = map(string)
  default     = {}
}

variable "environment" {
  description = "Environment variables of the function (the JENNAH_ settings)."
  type        = map(string)
}

variable "spanner_instance" {
  description = "Spanner instance of the memory store."
  type        = string
}

variable "spanner_database" {
  description = "Spanner database of the memory store."
  type        = string
}

variable "spanner_role" {
  description = "Role on the Spanner database (roles/spanner.databaseReader or roles/spanner.databaseUser), or null for none."
  type        = string
  default     = null
}

variable "firestore_database" {
  description = "Firestore database id of the control documents."
  type        = string
}

variable "firestore_access" {
  description = "Grant roles/datastore.user on var.firestore_database (identities, vocabularies, operations)."
  type        = bool
  default     = false
}

variable "vertex_ai" {
  description = "Grant roles/aiplatform.user (Gemini and text embeddings)."
  type        = bool
  default     = false
}

variable "labels" {
  description = "Labels of the function."
  type        = map(string)
  default     = {}
}
