"""memory:form: form memory from conversation turns.

`use_case` is the use case (submit, wait, work); `pipeline` the formation itself
(bounds and replay, then extraction, verification, reconciliation, one commit).
"""

from jennah.services.formation.command import (
    DEFAULT_DEADLINE_SECONDS,
    DEFAULT_INPUT_TOKEN_CAP,
    DEFAULT_MAX_OUTPUT_TOKENS,
    FormationCommand,
    estimate_input_tokens,
)
from jennah.services.formation.conflicts import KEY_CLAIMED, SUPERSEDED_FIRST, WRITE_CONFLICT
from jennah.services.formation.model_calls import FormationUsage
from jennah.services.formation.pipeline import PreparedFormation, prepare, run
from jennah.services.formation.reconciliation import SIMILARITY_THRESHOLD
from jennah.services.formation.use_case import (
    Formation,
    FormationRequest,
    OperationRequest,
    Outcome,
    result,
    worker_id,
)

__all__ = [
    "DEFAULT_DEADLINE_SECONDS",
    "DEFAULT_INPUT_TOKEN_CAP",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "KEY_CLAIMED",
    "SIMILARITY_THRESHOLD",
    "SUPERSEDED_FIRST",
    "WRITE_CONFLICT",
    "Formation",
    "FormationCommand",
    "FormationRequest",
    "FormationUsage",
    "OperationRequest",
    "Outcome",
    "PreparedFormation",
    "estimate_input_tokens",
    "prepare",
    "result",
    "run",
    "worker_id",
]
