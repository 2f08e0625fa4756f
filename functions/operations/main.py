"""Cloud Function `operations`: GET /v1/operations and GET /v1/operations/{operationId}."""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import routes


@functions_framework.http
def operations(request: flask.Request) -> flask.Response:
    return routes.serve(request, routes.OPERATION_ROUTES, bootstrap.container())
