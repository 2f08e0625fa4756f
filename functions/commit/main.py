"""Cloud Function `commit`: POST /v1/{agents,scopes}/{id}/memory:commit and :dream."""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import routes


@functions_framework.http
def commit(request: flask.Request) -> flask.Response:
    return routes.serve(request, routes.COMMIT_ROUTES + routes.DREAM_ROUTES, bootstrap.container())
