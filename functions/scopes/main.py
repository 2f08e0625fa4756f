"""Cloud Function `scopes`: GET /v1/agents, GET|POST /v1/scopes, DELETE /v1/scopes/{id}."""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import routes


@functions_framework.http
def scopes(request: flask.Request) -> flask.Response:
    return routes.serve(request, routes.SCOPE_ROUTES, bootstrap.container())
