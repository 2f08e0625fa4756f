# The HTTP functions: one Cloud Functions (2nd gen) function per folder under functions/, each
# deployed from build/functions/NAME.zip (scripts/package) with its own service account.
#
# local.function_catalog is the one place that says, per function: what it serves, who may call
# it, how big it is and what it may touch. The entry point is the folder name with '-' replaced
# by '_' (functions/form-worker/main.py defines form_worker). Sizing can be changed without
# editing this file through var.function_overrides.
#
#   public    true: internet-facing API; Cloud Run lets every request through and the function
#             authenticates the caller itself (API key, user token or Google-signed ID token).
#             false: only `invoker` (the Cloud Tasks or Cloud Scheduler service account) may
#             call it, enforced by Cloud Run IAM with an OIDC token, behind var.private_ingress.
#   spanner   role on the memory database: databaseUser where the function writes (read-write
#             transactions), databaseReader where it only reads. Every API function reads it to
#             resolve the caller's reach over scopes.
#   firestore datastore.user on the control documents (identities, API keys, role bindings,
#             vocabularies, formation operations); every API function authenticates through it.
#   vertex_ai aiplatform.user: Gemini (formation) and text embeddings (JENNAH_EMBEDDER=vertex,
#             so whatever embeds text: commit, query, form-worker).
#
# Sizing: 512Mi and 1 vCPU unless said otherwise (1 vCPU is what lets one instance serve
# concurrent requests). Timeouts are 60 s except where a request legitimately runs longer.

locals {
  function_catalog = {
    form = {
      description = "POST /v1/agents/{id}/memory:form: admits the formation, enqueues it and waits for its receipt"
      public      = true
      invoker     = null
      memory      = "512Mi"
      cpu         = "1"
      # The 30-minute formation ceiling: the request waits on the operation for up to 1800 s and
      # then answers DEADLINE_EXCEEDED itself (cancelling it); the platform's bound is a minute
      # later, so the client gets that answer rather than a dropped connection.
      timeout       = 1860
      min_instances = 0
      max_instances = 20
      # Waiting requests are idle (polling the operation), so one instance holds many.
      concurrency = 80
      # databaseUser, not databaseReader: admission reserves the formation's units and the first
      # formation registers the agent workspace, both in read-write transactions.
      spanner   = "roles/spanner.databaseUser"
      firestore = true
      vertex_ai = false
      enabled   = true
    }
    form-worker = {
      description = "Cloud Tasks target: runs one formation (model calls, checks, one commit)"
      public      = false
      invoker     = "tasks"
      # Turns (up to 200), candidates, nearest memories and model responses in memory at once.
      memory        = "2Gi"
      cpu           = "1"
      timeout       = 1800
      min_instances = 0
      # One formation per instance, as many instances as the queue dispatches at once.
      max_instances = var.formation_max_concurrency
      concurrency   = 1
      spanner       = "roles/spanner.databaseUser"
      firestore     = true
      vertex_ai     = true
      enabled       = true
    }
    commit = {
      description   = "POST /v1/{agents,scopes}/{id}/memory:commit, memory:dream and memories/{memoryId}:edit"
      public        = true
      invoker       = null
      memory        = "512Mi"
      cpu           = "1"
      timeout       = 60
      min_instances = 0
      max_instances = 20
      concurrency   = 16
      spanner       = "roles/spanner.databaseUser"
      firestore     = true
      vertex_ai     = true
      enabled       = true
    }
    query = {
      description = "POST /v1/{agents,scopes}/{id}/memory:query and memory:search"
      public      = true
      invoker     = null
      # Hybrid retrieval ranks vector, keyword and graph candidates in memory.
      memory        = "1Gi"
      cpu           = "1"
      timeout       = 60
      min_instances = 0
      max_instances = 20
      concurrency   = 16
      spanner       = "roles/spanner.databaseReader"
      firestore     = true
      vertex_ai     = true
      enabled       = true
    }
    keyed = {
      description = "PUT|GET|DELETE /v1/{agents,scopes}/{id}/keyedMemories/{key}, GET …/keyedMemories, POST …/keyedMemories/{key}:link|:unlink, POST …/keyedMemories:recall|:search"
      public      = true
      invoker     = null
      memory      = "512Mi"
      cpu         = "1"
      timeout     = 60
      # remember, link and forget are read-write transactions (a first remember registers
      # the scope); recall may make one model call when JENNAH_KEYED_RECALL_JUDGE is on
      min_instances = 0
      max_instances = 20
      concurrency   = 16
      spanner       = "roles/spanner.databaseUser"
      firestore     = true
      vertex_ai     = true
      enabled       = true
    }
    inspect = {
      description   = "GET /v1/{agents,scopes}/{id}/memory:inspect, GET /v1/agents/{id}/memory/steps/{stepId}, GET /v1/{agents,scopes}/{id}/memories/{memoryId}/evidence, GET /v1/{agents,scopes}/{id}/memories/{memoryId}, POST /v1/{agents,scopes}/{id}/memory:readExcerpt, GET /v1/{agents,scopes}/{id}/memories and GET /v1/{agents,scopes}/{id}/memory/brief"
      public        = true
      invoker       = null
      memory        = "512Mi"
      cpu           = "1"
      timeout       = 60
      min_instances = 0
      max_instances = 10
      concurrency   = 16
      spanner       = "roles/spanner.databaseReader"
      firestore     = true
      vertex_ai     = false
      enabled       = true
    }
    scopes = {
      description   = "GET /v1/agents, GET|POST /v1/scopes, PATCH|DELETE /v1/scopes/{id}"
      public        = true
      invoker       = null
      memory        = "512Mi"
      cpu           = "1"
      timeout       = 60
      min_instances = 0
      max_instances = 10
      concurrency   = 16
      # Creates, updates (time zone) and destroys scopes (with their memory vocabulary, in Firestore).
      spanner   = "roles/spanner.databaseUser"
      firestore = true
      vertex_ai = false
      enabled   = true
    }
    admin = {
      description   = "/v1/caller, /v1/apiKeys, /v1/roleBindings, /v1/users"
      public        = true
      invoker       = null
      memory        = "512Mi"
      cpu           = "1"
      timeout       = 60
      min_instances = 0
      max_instances = 5
      concurrency   = 16
      # Keys, role bindings and users are Firestore documents; Spanner is only read (reach).
      spanner   = "roles/spanner.databaseReader"
      firestore = true
      vertex_ai = false
      enabled   = true
    }
    vocabulary = {
      description   = "PUT|GET|DELETE /v1/memory/vocabulary"
      public        = true
      invoker       = null
      memory        = "512Mi"
      cpu           = "1"
      timeout       = 60
      min_instances = 0
      max_instances = 10
      concurrency   = 16
      spanner       = "roles/spanner.databaseReader"
      firestore     = true
      vertex_ai     = false
      enabled       = true
    }
    usage = {
      description   = "GET /v1/billing, POST /v1/billing:setOverageMultiple, GET /v1/billing/usage/formation-tokens"
      public        = true
      invoker       = null
      memory        = "512Mi"
      cpu           = "1"
      timeout       = 60
      min_instances = 0
      max_instances = 10
      concurrency   = 16
      # databaseUser, not databaseReader: setOverageMultiple writes the billing settings.
      spanner   = "roles/spanner.databaseUser"
      firestore = true
      vertex_ai = false
      enabled   = true
    }
    usage-rollup = {
      description = "Cloud Scheduler target: folds usage records into hourly and daily aggregates"
      public      = false
      invoker     = "scheduler"
      memory      = "512Mi"
      cpu         = "1"
      # Folds every enterprise's new usage rows; 60 s is tight after a backlog.
      timeout       = 300
      min_instances = 0
      # One rollup at a time: an overlapping run is refused (429) and retried by the scheduler.
      max_instances = 1
      concurrency   = 1
      spanner       = "roles/spanner.databaseUser"
      firestore     = false
      vertex_ai     = false
      enabled       = true
    }
    operations = {
      description   = "Formation operations: read (and cancel) the long-running operation of a memory:form"
      public        = true
      invoker       = null
      memory        = "512Mi"
      cpu           = "1"
      timeout       = 60
      min_instances = 0
      max_instances = 10
      concurrency   = 16
      spanner       = "roles/spanner.databaseReader"
      firestore     = true
      vertex_ai     = false
      enabled       = true
    }
    # The MCP server over streamable HTTP (functions/mcp): no store access of its own; its tools
    # call the API functions (JENNAH_ENDPOINT below) with the caller's Authorization, so reach
    # is theirs to enforce.
    mcp = {
      description   = "POST /agents/{id}, /scopes/{id} and /scopes/{id}/shared: the MCP tools (streamable HTTP, stateless)"
      public        = true
      invoker       = null
      memory        = "512Mi"
      cpu           = "1"
      timeout       = 60
      min_instances = 0
      max_instances = 10
      concurrency   = 16
      spanner       = null
      firestore     = false
      vertex_ai     = false
      enabled       = true
    }
    # The memory console (functions/console): static pages a person opens in a browser; no
    # store access of its own. The pages call the API functions (JENNAH_ENDPOINT below, told
    # to them in config.json) with the credential the person pastes, so every rule is theirs.
    console = {
      description   = "GET /, /config.json, /js/*.js, /console.css: the memory console's pages"
      public        = true
      invoker       = null
      memory        = "512Mi"
      cpu           = "1"
      timeout       = 60
      min_instances = 0
      max_instances = 5
      concurrency   = 80
      spanner       = null
      firestore     = false
      vertex_ai     = false
      enabled       = true
    }
    # The nightly lifecycle pass ("dreaming", functions/lifecycle): walks every scope, expires,
    # promotes and decays claims and recompiles their briefs. Deterministic: no model calls.
    lifecycle = {
      description = "Cloud Scheduler target: the nightly lifecycle pass over every scope's claims"
      public      = false
      invoker     = "scheduler"
      # The brief's tokenizer and one scope's claims at a time.
      memory = "1Gi"
      cpu    = "1"
      # A run starts no scope pass after 1500 s and answers 503; the scheduler's retry resumes
      # the walk from its cursor.
      timeout       = 1800
      min_instances = 0
      # One walk at a time: an overlapping run is refused (429) and retried by the scheduler.
      max_instances = 1
      concurrency   = 1
      # Changes claims and writes briefs and change logs (read-write transactions).
      spanner = "roles/spanner.databaseUser"
      # The walk's cursor is a control document (walkCursors/lifecycle).
      firestore = true
      vertex_ai = false
      enabled   = var.enable_lifecycle_job
    }
  }

  # The enabled functions, with var.function_overrides applied and their entry points.
  functions = {
    for name, spec in local.function_catalog : name => merge(
      spec,
      { for key, value in try(var.function_overrides[name], {}) : key => value if value != null },
      { entry_point = replace(name, "-", "_") },
    ) if spec.enabled
  }

  artifacts_dir = startswith(var.artifacts_dir, "/") ? var.artifacts_dir : "${path.module}/${var.artifacts_dir}"

  # Who may invoke a private function, by the catalog's `invoker`.
  invoker_members = {
    tasks     = google_service_account.tasks_invoker.member
    scheduler = google_service_account.scheduler.member
  }

  # The JENNAH_ settings every function reads (jennah.settings.Settings).
  function_environment = merge(
    {
      JENNAH_STORE                  = "spanner"
      JENNAH_CONTROL                = "firestore"
      JENNAH_EMBEDDER               = "vertex"
      JENNAH_FORMATION_MODEL        = "vertex"
      JENNAH_SPANNER_PROJECT        = var.project_id
      JENNAH_SPANNER_INSTANCE       = google_spanner_instance.memory.name
      JENNAH_SPANNER_DATABASE       = google_spanner_database.memory.name
      JENNAH_FIRESTORE_PROJECT      = var.project_id
      JENNAH_FIRESTORE_DATABASE     = google_firestore_database.control.name
      JENNAH_VERTEX_PROJECT         = var.project_id
      JENNAH_VERTEX_LOCATION        = local.vertex_location
      JENNAH_VERTEX_MODEL           = var.formation_model
      JENNAH_VERTEX_EMBEDDING_MODEL = var.embedding_model
      JENNAH_DEFAULT_PLAN           = var.default_plan
      JENNAH_TASKS_PROJECT          = var.project_id
      JENNAH_TASKS_LOCATION         = google_cloud_tasks_queue.formations.location
      JENNAH_TASKS_QUEUE            = google_cloud_tasks_queue.formations.name
      # The identity whose OIDC token Cloud Tasks attaches to each formation task; the only
      # principal allowed to invoke the form-worker.
      JENNAH_TASKS_SERVICE_ACCOUNT = google_service_account.tasks_invoker.email
    },
    var.oidc_audience == "" ? {} : { JENNAH_OIDC_AUDIENCE = var.oidc_audience },
  )
}

# Deploy artifacts, one object per function and artifact version.
resource "google_storage_bucket" "function_sources" {
  #checkov:skip=CKV_GCP_62:Access logs of a bucket only Terraform and Cloud Build touch add nothing over Cloud Audit Logs (data access logs can be enabled project-wide).
  project                     = var.project_id
  name                        = "${var.project_id}-${var.name_prefix}functions"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  labels                      = var.labels
  # The artifacts are rebuilt from git by every deploy.
  force_destroy = true

  versioning {
    enabled = true
  }

  lifecycle_rule {
    condition {
      days_since_noncurrent_time = 30
    }
    action {
      type = "Delete"
    }
  }

  depends_on = [google_project_service.required]
}

# The built function images (instead of the implicit gcf-artifacts repository), so the build
# service account writes to this repository only and old images are cleaned up.
resource "google_artifact_registry_repository" "functions" {
  #checkov:skip=CKV_GCP_84:Images hold only code from this repository (no data or secrets); Google-managed encryption is enough, and a CMEK is a per-organisation choice.
  project       = var.project_id
  location      = var.region
  repository_id = "${var.name_prefix}functions"
  description   = "Images of the Jennah Memory Cloud Functions, built by Cloud Build."
  format        = "DOCKER"
  labels        = var.labels

  cleanup_policy_dry_run = false

  cleanup_policies {
    id     = "keep-recent"
    action = "KEEP"
    most_recent_versions {
      keep_count = 5
    }
  }

  cleanup_policies {
    id     = "delete-old"
    action = "DELETE"
    condition {
      older_than = "2592000s" # 30 days
    }
  }

  depends_on = [google_project_service.required]
}

# The identity Cloud Build uses to build the functions (not the project's default build or
# compute service account, which may lack these permissions or hold far more).
resource "google_service_account" "build" {
  project      = var.project_id
  account_id   = "${var.name_prefix}build"
  display_name = "Jennah function builds"
  description  = "Cloud Build identity for building the Jennah Memory functions."

  depends_on = [google_project_service.required]
}

resource "google_project_iam_member" "build_logs" {
  project = var.project_id
  role    = "roles/logging.logWriter"
  member  = google_service_account.build.member
}

# Reads the function source: the artifact bucket and the Google-managed gcf-v2-sources-*
# bucket Cloud Functions copies it to, which Terraform does not manage (hence project level).
resource "google_project_iam_member" "build_sources" {
  project = var.project_id
  role    = "roles/storage.objectViewer"
  member  = google_service_account.build.member
}

resource "google_artifact_registry_repository_iam_member" "build_images" {
  project    = var.project_id
  location   = google_artifact_registry_repository.functions.location
  repository = google_artifact_registry_repository.functions.name
  role       = "roles/artifactregistry.writer"
  member     = google_service_account.build.member
}

locals {
  # Shared by both groups of functions below.
  function_defaults = {
    project_id               = var.project_id
    region                   = var.region
    runtime                  = var.python_runtime
    source_bucket            = google_storage_bucket.function_sources.name
    build_service_account_id = google_service_account.build.id
    docker_repository        = google_artifact_registry_repository.functions.id
    private_ingress          = var.private_ingress
    spanner_instance         = google_spanner_instance.memory.name
    spanner_database         = google_spanner_database.memory.name
    firestore_database       = google_firestore_database.control.name
  }
}

# The private functions (Cloud Tasks and Cloud Scheduler targets). A module block of their own:
# the API functions' environment names the form-worker's URL.
module "backend" {
  source   = "./modules/function"
  for_each = { for name, spec in local.functions : name => spec if !spec.public }

  name        = "${var.name_prefix}${each.key}"
  description = each.value.description
  entry_point = each.value.entry_point
  source_zip  = "${local.artifacts_dir}/${each.key}.zip"
  public      = false
  invokers    = { (each.value.invoker) = local.invoker_members[each.value.invoker] }
  environment = local.function_environment
  labels      = merge(var.labels, { function = each.key })

  memory          = each.value.memory
  cpu             = each.value.cpu
  timeout_seconds = each.value.timeout
  min_instances   = each.value.min_instances
  max_instances   = each.value.max_instances
  concurrency     = each.value.concurrency

  spanner_role     = each.value.spanner
  firestore_access = each.value.firestore
  vertex_ai        = each.value.vertex_ai

  project_id               = local.function_defaults.project_id
  region                   = local.function_defaults.region
  runtime                  = local.function_defaults.runtime
  source_bucket            = local.function_defaults.source_bucket
  build_service_account_id = local.function_defaults.build_service_account_id
  docker_repository        = local.function_defaults.docker_repository
  private_ingress          = local.function_defaults.private_ingress
  spanner_instance         = local.function_defaults.spanner_instance
  spanner_database         = local.function_defaults.spanner_database
  firestore_database       = local.function_defaults.firestore_database

  depends_on = [
    google_project_service.required,
    google_project_iam_member.build_logs,
    google_project_iam_member.build_sources,
    google_artifact_registry_repository_iam_member.build_images,
  ]
}

# The public API functions.
module "api" {
  source   = "./modules/function"
  for_each = { for name, spec in local.functions : name => spec if spec.public }

  name        = "${var.name_prefix}${each.key}"
  description = each.value.description
  entry_point = each.value.entry_point
  source_zip  = "${local.artifacts_dir}/${each.key}.zip"
  public      = true
  environment = merge(
    local.function_environment,
    {
      # Where form's Cloud Tasks tasks go (also their OIDC audience).
      JENNAH_FORM_WORKER_URL = module.backend["form-worker"].uri
    },
    # The API as the mcp function's tools (and the console's pages) call it: {function} is
    # the function serving a route.
    !contains(["mcp", "console"], each.key) ? {} : {
      JENNAH_ENDPOINT = "https://${var.region}-${var.project_id}.cloudfunctions.net/${var.name_prefix}{function}"
    },
  )
  labels = merge(var.labels, { function = each.key })

  memory          = each.value.memory
  cpu             = each.value.cpu
  timeout_seconds = each.value.timeout
  min_instances   = each.value.min_instances
  max_instances   = each.value.max_instances
  concurrency     = each.value.concurrency

  spanner_role     = each.value.spanner
  firestore_access = each.value.firestore
  vertex_ai        = each.value.vertex_ai

  project_id               = local.function_defaults.project_id
  region                   = local.function_defaults.region
  runtime                  = local.function_defaults.runtime
  source_bucket            = local.function_defaults.source_bucket
  build_service_account_id = local.function_defaults.build_service_account_id
  docker_repository        = local.function_defaults.docker_repository
  private_ingress          = local.function_defaults.private_ingress
  spanner_instance         = local.function_defaults.spanner_instance
  spanner_database         = local.function_defaults.spanner_database
  firestore_database       = local.function_defaults.firestore_database

  depends_on = [
    google_project_service.required,
    google_project_iam_member.build_logs,
    google_project_iam_member.build_sources,
    google_artifact_registry_repository_iam_member.build_images,
  ]
}
