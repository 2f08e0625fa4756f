"""Cloud Function `commit`: POST /v1/{agents,scopes}/{id}/memory:commit, :import and
:dream, POST …/memories/{memoryId}:edit, POST …/memories/{memoryId}:forget and
…/memories:forgetGroup, and DELETE …/suppressions/{suppressionId}."""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import routes


@functions_framework.http
def commit(request: flask.Request) -> flask.Response:
    served = (
        routes.COMMIT_ROUTES
        + routes.IMPORT_ROUTES
        + routes.DREAM_ROUTES
        + routes.EDIT_ROUTES
        + routes.FORGET_ROUTES
        + tuple(r for r in routes.SUPPRESSION_ROUTES if r.method == "DELETE")
    )
    return routes.serve(request, served, bootstrap.container())
