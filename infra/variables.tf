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
