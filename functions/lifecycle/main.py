"""Cloud Function `lifecycle`: the nightly lifecycle ("dream") pass over every scope.

The target of a Cloud Scheduler job (nightly, in infra/). The function is private:
Cloud Run IAM admits only the scheduler's service account, so it takes no Jennah
credential. It resumes a walk a killed or timed-out run left unfinished; a run that
runs out of time answers 503 so the scheduler's retry goes on from there.
"""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import jobs


@functions_framework.http
def lifecycle(request: flask.Request) -> flask.Response:
    return jobs.lifecycle(request, bootstrap.container())
