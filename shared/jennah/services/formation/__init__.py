"""memory:form: form memory from conversation turns (see `pipeline` for the steps)."""

from jennah.services.formation.command import (
    DEFAULT_DEADLINE_SECONDS,
    DEFAULT_INPUT_TOKEN_CAP,
    DEFAULT_MAX_OUTPUT_TOKENS,
    FormationCommand,
    estimate_input_tokens,
)
from jennah.services.formation.conflicts import KEY_CLAIMED, SUPERSEDED_FIRST, WRITE_CONFLICT
from jennah.services.formation.model_calls import FormationUsage
from jennah.services.formation.pipeline import PreparedFormation, form, prepare, run
from jennah.services.formation.reconciliation import SIMILARITY_THRESHOLD

__all__ = [
    "DEFAULT_DEADLINE_SECONDS",
    "DEFAULT_INPUT_TOKEN_CAP",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "KEY_CLAIMED",
    "SIMILARITY_THRESHOLD",
    "SUPERSEDED_FIRST",
    "WRITE_CONFLICT",
    "FormationCommand",
    "FormationUsage",
    "PreparedFormation",
    "estimate_input_tokens",
    "form",
    "prepare",
    "run",
]
