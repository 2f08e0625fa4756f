"""Cloud Function `form`: POST /v1/agents/{agentInstanceId}/memory:form."""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import routes


@functions_framework.http
def form(request: flask.Request) -> flask.Response:
    return routes.serve(request, routes.FORM_ROUTES, bootstrap.container())
