"""Cloud Function `keyed`: /v1/{agents,scopes}/{id}/keyedMemories… (keyed memory)."""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import routes


@functions_framework.http
def keyed(request: flask.Request) -> flask.Response:
    return routes.serve(request, routes.KEYED_ROUTES, bootstrap.container())
