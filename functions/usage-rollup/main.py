"""Cloud Function `usage-rollup`: fold the usage ledger into per-hour aggregates.

The target of a Cloud Scheduler job (every 15 minutes in infra/). The function
is private: Cloud Run IAM admits only the scheduler's service account, so it
takes no Jennah credential. Idempotent and safe to run concurrently.
"""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import jobs


@functions_framework.http
def usage_rollup(request: flask.Request) -> flask.Response:
    return jobs.usage_rollup(request, bootstrap.container())
