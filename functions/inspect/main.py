"""Cloud Function `inspect`: GET /v1/{agents,scopes}/{id}/memory:inspect,
GET /v1/agents/{id}/memory/steps/{stepId},
GET /v1/{agents,scopes}/{id}/memories/{memoryId}/evidence,
GET /v1/{agents,scopes}/{id}/memories/{memoryId}, POST /v1/{agents,scopes}/{id}/memory:readExcerpt,
GET /v1/{agents,scopes}/{id}/memories (the memory card),
GET /v1/{agents,scopes}/{id}/memory/brief GET /v1/{agents,scopes}/{id}/memory:export and
GET /v1/{agents,scopes}/{id}/suppressions."""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import routes

INSPECT_ROUTES = (
    routes.INSPECT_ROUTES
    + routes.STEP_ROUTES
    + routes.EVIDENCE_ROUTES
    + routes.MEMORY_GET_ROUTES
    + routes.READ_EXCERPT_ROUTES
    + routes.MEMORY_CARD_ROUTES
    + routes.BRIEF_ROUTES
    + routes.EXPORT_ROUTES
    + tuple(r for r in routes.SUPPRESSION_ROUTES if r.method == "GET")
)


@functions_framework.http
def inspect(request: flask.Request) -> flask.Response:
    return routes.serve(request, INSPECT_ROUTES, bootstrap.container())
