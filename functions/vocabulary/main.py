"""Cloud Function `vocabulary`: PUT|GET|DELETE /v1/memory/vocabulary."""

import flask
import functions_framework

from jennah import bootstrap
from jennah.api import routes


@functions_framework.http
def vocabulary(request: flask.Request) -> flask.Response:
    return routes.serve(request, routes.VOCABULARY_ROUTES, bootstrap.container())
