"""Cloud Function `admin`: /v1/caller, /v1/apiKeys…, /v1/roleBindings…, /v1/users."""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import routes


@functions_framework.http
def admin(request: flask.Request) -> flask.Response:
    return routes.serve(request, routes.ADMIN_ROUTES, bootstrap.container())
