"""The task queue port: hand a long formation to the form-worker.

The `form` function creates an operation document, then enqueues one
`FormationTask`; the form-worker reads the operation back by the task's ids.
Production puts the task on a Cloud Tasks queue (an HTTP task to the worker);
delivery is at-least-once, so the worker must be idempotent.

The task travels as a small JSON body, `task_body` / `task_from_body`:
`{"enterpriseId": "...", "operationId": "..."}`.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from jennah import errors


class FormationTask(BaseModel):
    """One formation to run: the operation `operation_id` of `enterprise_id`."""

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)

    enterprise_id: str = Field(min_length=1)
    operation_id: str = Field(min_length=1)


class TaskQueue(Protocol):
    def enqueue(self, task: FormationTask) -> None:
        """Schedule one delivery of the task to the form-worker.

        At-least-once: the worker may receive the same task more than once
        (retries, a double enqueue), so it must be idempotent. Raises
        `jennah.errors.Unavailable` when the queue cannot be reached, and
        `jennah.errors.NotFound` when the queue does not exist.
        """
        ...


def task_body(task: FormationTask) -> bytes:
    """The task as the JSON body the worker receives."""
    return task.model_dump_json(by_alias=True).encode()


def task_from_body(body: bytes) -> FormationTask:
    """The task a worker request carries; InvalidArgument when the body is not one."""
    try:
        return FormationTask.model_validate_json(body)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'body'}: {error['msg']}"
            for error in exc.errors()
        )
        raise errors.InvalidArgument(f"the formation task body is malformed: {problems}") from exc
