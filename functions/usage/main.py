"""Cloud Function `usage`: GET /v1/billing, POST /v1/billing:setOverageMultiple,
GET /v1/billing/usage/formation-tokens."""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import routes


@functions_framework.http
def usage(request: flask.Request) -> flask.Response:
    return routes.serve(request, routes.USAGE_ROUTES, bootstrap.container())
