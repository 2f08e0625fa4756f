"""Cloud Function `form-worker`: runs memory:form operations delivered by Cloud Tasks.

Private: Cloud Run IAM admits only the queue's service account (an OIDC token).
"""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import jobs


@functions_framework.http
def form_worker(request: flask.Request) -> flask.Response:
    return jobs.form_worker(request, bootstrap.container())
