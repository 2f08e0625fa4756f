"""Cloud Function `query`: POST /v1/{agents,scopes}/{id}/memory:query and memory:search."""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import routes


@functions_framework.http
def query(request: flask.Request) -> flask.Response:
    return routes.serve(request, routes.QUERY_ROUTES + routes.SEARCH_ROUTES, bootstrap.container())
