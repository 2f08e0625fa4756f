"""Work served over HTTP by private functions: the usage rollup and the nightly lifecycle
pass (Cloud Scheduler targets) and the form-worker (the Cloud Tasks target).

These functions are not part of the public API: Cloud Run IAM admits only the
scheduler's or the queue's service account (OIDC), so they take no Jennah
credential. Each answers with what it did, or a Google error body.
"""

from __future__ import annotations

import time

import flask

from jennah.api import dto, logs
from jennah.api.context import Services
from jennah.api.routes import error_reply, json_response
from jennah.errors import Aborted, Internal, InvalidArgument, JennahError, Unavailable
from jennah.ports.tasks import task_from_body
from jennah.services import lifecycle as lifecycle_service
from jennah.services import usage_report
from jennah.services.formation import Outcome

RETRY_AFTER_SECONDS = 10
# The nightly lifecycle run stops starting scope passes after this long and answers 503,
# so the scheduler's retry resumes the walk: well inside the function's 1800 s timeout.
LIFECYCLE_BUDGET_SECONDS = 1500.0
LIFECYCLE_RETRY_AFTER_SECONDS = 60


def form_worker(request: flask.Request, services: Services) -> flask.Response:
    """POST a FormationTask: run its operation once (see `Formation.work`).

    2xx acknowledges the task: the operation finished (its receipt or its error is
    recorded on it), or there was nothing to do. 503 asks the queue to deliver it
    again later: another worker holds the operation, or a transient failure. A
    body that is not a task is 400 (there is no operation to record it on).
    """
    try:
        if request.method != "POST":
            raise InvalidArgument(f"{request.method} is not allowed; tasks are delivered by POST")
        task = task_from_body(request.get_data(cache=False))
        outcome = services.formation.work(task)
    except (Unavailable, Aborted) as err:  # the operations store: transient
        logs.log("WARNING", f"form-worker: {err.status}: {err.message}; the queue retries")
        outcome = Outcome.RETRY
    except JennahError as err:
        return error_reply(err)
    except Exception as exc:
        logs.log_exception("form-worker failed", exc)
        return error_reply(Internal("internal error; the server log has the details"))
    if outcome is Outcome.RETRY:
        return json_response(
            {"outcome": outcome.value}, 503, {"Retry-After": str(RETRY_AFTER_SECONDS)}
        )
    return json_response({"outcome": outcome.value, "operation": task.operation_id}, 200)


def usage_rollup(request: flask.Request, services: Services) -> flask.Response:
    """POST: fold the ledger up to now minus the rollup lag."""
    try:
        if request.method != "POST":
            raise InvalidArgument(f"{request.method} is not allowed; the rollup is run by POST")
        result = usage_report.rollup(services.ledger, services.now())
    except JennahError as err:
        return error_reply(err)
    except Exception as exc:  # log it, tell the caller nothing inside
        logs.log_exception("usage rollup failed", exc)
        return error_reply(Internal("internal error; the server log has the details"))
    logs.log(
        "INFO",
        f"usage rollup: {result.rows_folded} rows folded",
        usageRollup={
            "rowsFolded": result.rows_folded,
            "watermark": result.watermark.isoformat(),
        },
    )
    return json_response(
        {"rowsFolded": result.rows_folded, "watermark": result.watermark.isoformat()}, 200
    )


def lifecycle(
    request: flask.Request, services: Services, budget_seconds: float = LIFECYCLE_BUDGET_SECONDS
) -> flask.Response:
    """POST: walk every scope from where the last run stopped
    (`jennah.services.lifecycle.nightly`).

    200 when the walk reached the last scope; 503 with Retry-After when the budget ran
    out first (the cursor is saved: the scheduler's retry resumes there).
    """
    deadline = time.monotonic() + budget_seconds
    try:
        if request.method != "POST":
            raise InvalidArgument(f"{request.method} is not allowed; the pass is run by POST")
        report = lifecycle_service.nightly(
            services.store,
            services.cursors,
            services.now(),
            stop=lambda: time.monotonic() >= deadline,
        )
    except JennahError as err:
        return error_reply(err)
    except Exception as exc:  # log it, tell the caller nothing inside
        logs.log_exception("lifecycle pass failed", exc)
        return error_reply(Internal("internal error; the server log has the details"))
    body: dict[str, object] = {
        "finished": report.finished,
        "walkStartedAt": dto.format_timestamp(report.started_at),
        "scopes": report.scopes,
        "expired": report.expired,
        "promoted": report.promoted,
        "decayed": report.decayed,
        "briefsChanged": report.briefs_changed,
        "failedScopes": len(report.failed),
    }
    failed = [f"{s.enterprise_id}/{s.scope_id}" for s in report.failed[:20]]
    logs.log(
        "WARNING" if report.failed else "INFO",
        f"lifecycle pass: {report.scopes} scopes, finished={report.finished}",
        lifecycle={**body, "failed": failed},
    )
    if not report.finished:
        return json_response(body, 503, {"Retry-After": str(LIFECYCLE_RETRY_AFTER_SECONDS)})
    return json_response(body, 200)
