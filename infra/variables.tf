variable "project_id" {
  description = "Google Cloud project that hosts Jennah Memory."
  type        = string
}

variable "region" {
  description = "Region of the functions, queues and regional resources."
  type        = string
  default     = "us-central1"
}

variable "labels" {
  description = "Labels put on every labelled resource."
  type        = map(string)
  default     = { app = "jennah-memory" }
}

variable "spanner_instance_name" {
  description = "Cloud Spanner instance id."
  type        = string
  default     = "jennah"
}

variable "spanner_instance_config" {
  description = "Cloud Spanner instance configuration (placement), e.g. regional-us-central1 or nam6."
  type        = string
  default     = "regional-us-central1"
}

variable "spanner_processing_units" {
  description = "Compute capacity of the instance: 100 to 900 in steps of 100, then multiples of 1000."
  type        = number
  default     = 100

  validation {
    condition = (
      (var.spanner_processing_units >= 100 && var.spanner_processing_units < 1000 && var.spanner_processing_units % 100 == 0)
      || (var.spanner_processing_units >= 1000 && var.spanner_processing_units % 1000 == 0)
    )
    error_message = "spanner_processing_units must be 100-900 in steps of 100, or a multiple of 1000."
  }
}

variable "spanner_database_name" {
  description = "Cloud Spanner database id (the memory store)."
  type        = string
  default     = "jennah"

  validation {
    condition     = can(regex("^[a-z][a-z0-9_-]{0,28}[a-z0-9]$", var.spanner_database_name))
    error_message = "spanner_database_name must be 2-30 characters: lower-case letters, digits, _ or -, starting with a letter."
  }
}

variable "deletion_protection" {
  description = "Refuse to destroy the Spanner database (and so any change that would replace it)."
  type        = bool
  default     = true
}

variable "firestore_database_name" {
  description = "Firestore (native mode) database id for control documents; '(default)' or a named database."
  type        = string
  default     = "(default)"
}

variable "firestore_location" {
  description = "Firestore location, e.g. us-central1 or nam5."
  type        = string
  default     = "us-central1"
}

variable "name_prefix" {
  description = "Prefix of the functions, service accounts, scheduler jobs and repository this deployment creates (the function `form` is deployed as NAME_PREFIXform)."
  type        = string
  default     = "jennah-"

  validation {
    # Service account ids are 6-30 characters; the longest suffix is "tasks-invoker" (13).
    condition     = can(regex("^[a-z][a-z0-9-]{1,16}$", var.name_prefix))
    error_message = "name_prefix must be 2-17 characters: lower-case letters, digits or -, starting with a letter."
  }
}

variable "artifacts_dir" {
  description = "Folder holding one deploy artifact per function, NAME.zip, built by scripts/package. A relative path is relative to infra/."
  type        = string
  default     = "../build/functions"
}

variable "python_runtime" {
  description = "Cloud Functions runtime of every function."
  type        = string
  default     = "python311"
}

variable "default_plan" {
  description = "Plan given to an enterprise that has no billing settings yet (JENNAH_DEFAULT_PLAN)."
  type        = string
  default     = "FREE"

  validation {
    condition     = contains(["FREE", "TRIAL", "PRO", "SCALE", "TEAM", "ENTERPRISE"], var.default_plan)
    error_message = "default_plan must be one of FREE, TRIAL, PRO, SCALE, TEAM, ENTERPRISE."
  }
}

variable "formation_model" {
  description = "Gemini model on Vertex AI that extracts and reconciles memories (JENNAH_VERTEX_MODEL)."
  type        = string
  default     = "gemini-2.5-flash"
}

variable "embedding_model" {
  description = "Vertex AI text embedding model (JENNAH_VERTEX_EMBEDDING_MODEL); asked for 384-d vectors, the schema's vector_length."
  type        = string
  default     = "text-embedding-005"
}

variable "vertex_location" {
  description = "Vertex AI location of both models (JENNAH_VERTEX_LOCATION); empty: var.region."
  type        = string
  default     = ""
}

variable "oidc_audience" {
  description = "Audience that Google-signed ID tokens of people must carry (JENNAH_OIDC_AUDIENCE), e.g. an OAuth client id. Empty: users sign in with API keys only."
  type        = string
  default     = ""
}

variable "formation_queue_name" {
  description = "Cloud Tasks queue of long formations. A deleted queue's name cannot be reused for about 7 days."
  type        = string
  default     = "formations"
}

variable "formation_max_concurrency" {
  description = "Formations run at once: the queue's max_concurrent_dispatches and the form-worker's max instances (one formation per instance)."
  type        = number
  default     = 50

  validation {
    condition     = var.formation_max_concurrency >= 1 && var.formation_max_concurrency <= 1000
    error_message = "formation_max_concurrency must be between 1 and 1000."
  }
}

variable "formation_dispatches_per_second" {
  description = "Rate at which the queue starts formations (max_dispatches_per_second)."
  type        = number
  default     = 10
}

variable "private_ingress" {
  description = "Ingress of the private functions (form-worker, usage-rollup, lifecycle). ALLOW_INTERNAL_ONLY admits Cloud Tasks and Cloud Scheduler of the same project; use ALLOW_ALL (still IAM-gated) when they run in another project."
  type        = string
  default     = "ALLOW_INTERNAL_ONLY"

  validation {
    condition     = contains(["ALLOW_ALL", "ALLOW_INTERNAL_ONLY", "ALLOW_INTERNAL_AND_GCLB"], var.private_ingress)
    error_message = "private_ingress must be ALLOW_ALL, ALLOW_INTERNAL_ONLY or ALLOW_INTERNAL_AND_GCLB."
  }
}

variable "function_overrides" {
  description = "Per-function changes to the sizing in functions.tf, by function (folder) name, e.g. { query = { min_instances = 1 } }."
  type = map(object({
    memory        = optional(string)
    cpu           = optional(string)
    timeout       = optional(number)
    min_instances = optional(number)
    max_instances = optional(number)
    concurrency   = optional(number)
  }))
  default = {}
}

variable "scheduler_time_zone" {
  description = "Time zone of the Cloud Scheduler schedules."
  type        = string
  default     = "Etc/UTC"
}

variable "usage_rollup_schedule" {
  description = "Cron schedule of the usage rollup (folds usage records into hourly and daily aggregates)."
  type        = string
  default     = "*/15 * * * *"
}

variable "enable_lifecycle_job" {
  description = "Deploy the `lifecycle` function (functions/lifecycle) and its nightly Cloud Scheduler job: the lifecycle pass over every scope (expiry, promotion, decay, briefs)."
  type        = bool
  default     = true
}

variable "lifecycle_schedule" {
  description = "Cron schedule of the nightly lifecycle pass (when enable_lifecycle_job)."
  type        = string
  default     = "0 3 * * *"
}
