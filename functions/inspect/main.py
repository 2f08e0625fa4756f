"""Cloud Function `inspect`: GET /v1/{agents,scopes}/{id}/memory:inspect,
GET /v1/agents/{id}/memory/steps/{stepId} and GET /v1/{agents,scopes}/{id}/memory:export."""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import routes


@functions_framework.http
def inspect(request: flask.Request) -> flask.Response:
    served = routes.INSPECT_ROUTES + routes.STEP_ROUTES + routes.EXPORT_ROUTES
    return routes.serve(request, served, bootstrap.container())
