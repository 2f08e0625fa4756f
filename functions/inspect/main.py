"""Cloud Function `inspect`: GET /v1/{agents,scopes}/{id}/memory:inspect,
GET /v1/agents/{id}/memory/steps/{stepId} and GET /v1/{agents,scopes}/{id}/memory/brief."""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import routes

INSPECT_ROUTES = routes.INSPECT_ROUTES + routes.STEP_ROUTES + routes.BRIEF_ROUTES


@functions_framework.http
def inspect(request: flask.Request) -> flask.Response:
    return routes.serve(request, INSPECT_ROUTES, bootstrap.container())
