"""Cloud Function `inspect`: GET /v1/{agents,scopes}/{id}/memory:inspect."""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import routes


@functions_framework.http
def inspect(request: flask.Request) -> flask.Response:
    return routes.serve(request, routes.INSPECT_ROUTES, bootstrap.container())
