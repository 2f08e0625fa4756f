# Reads Spanner DDL files into the statement list google_spanner_database.ddl expects.
#
# Mirrors jennah.adapters.spanner.schema.split_statements (the tests' reader, checked equal by
# tests/unit/test_repo_layout.py): drop '--' comments, split on ';', collapse whitespace runs to
# one space, drop empty statements. Needs no provider.

variable "ddl_files" {
  description = "DDL files, applied in this order; statements are separated by ';'."
  type        = list(string)
}

locals {
  uncommented = [
    for path in var.ddl_files :
    join("\n", [for line in split("\n", file(path)) : split("--", line)[0]])
  ]

  statements = flatten([
    for code in local.uncommented : compact([
      for chunk in split(";", code) : trimspace(replace(chunk, "/\\s+/", " "))
    ])
  ])
}

output "statements" {
  description = "The DDL statements of every file, in order, without the trailing ';'."
  value       = local.statements
}
