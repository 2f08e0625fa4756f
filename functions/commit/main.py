"""Cloud Function `commit`: POST /v1/{agents,scopes}/{id}/memory:commit, :import and
:dream, and POST /v1/{agents,scopes}/{id}/memories/{memoryId}:edit."""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import routes


@functions_framework.http
def commit(request: flask.Request) -> flask.Response:
    served = routes.COMMIT_ROUTES + routes.IMPORT_ROUTES + routes.DREAM_ROUTES + routes.EDIT_ROUTES
    return routes.serve(request, served, bootstrap.container())
