"""memory:form with its allowance: prepare, admit, run, settle.

The order is the spec's: the bounds and the formationKey replay come first
(`formation.prepare`), so a request refused for its size and a replay are never
answered RESOURCE_EXHAUSTED and spend nothing; then admission against the
allowance (`billing.admit_formation`, which reserves the formation's units and
gives its per-call output bound); then the model calls and the commit
(`formation.run`); and settlement in every case, so a formation that reached the
model records its tokens and units even when it then failed.

`formation_operations` splits them across functions: prepare and `admit` in
the `form` function, `run_admitted` in the `form-worker` function.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime

from jennah.domain.access import Caller
from jennah.domain.formation import FormationReceipt
from jennah.ports.embedder import Embedder
from jennah.ports.model import LanguageModel
from jennah.ports.store import MemoryStore
from jennah.ports.usage import UsageLedger
from jennah.services import formation
from jennah.services.billing import AdmittedFormation, admit_formation, settle_formation
from jennah.services.formation import FormationUsage, PreparedFormation


@dataclasses.dataclass(frozen=True)
class FormationDeps:
    """What a formation runs against."""

    store: MemoryStore
    embedder: Embedder
    model: LanguageModel
    ledger: UsageLedger
    now: Callable[[], datetime]


def input_token_cap(ledger: UsageLedger, enterprise_id: str) -> int:
    """The input cap of the enterprise's plan (8,192 on Free; 16,384 on the trial, Pro,
    Scale and Team; 100,000 on Enterprise)."""
    return ledger.get_billing(enterprise_id).terms.input_token_cap


def admit(
    prepared: PreparedFormation, caller: Caller, deps: FormationDeps
) -> tuple[PreparedFormation, AdmittedFormation]:
    """Admit a prepared formation (RESOURCE_EXHAUSTED, nothing spent, past the allowance
    or with too many in progress); the formation bounded by what was admitted."""
    admitted = admit_formation(deps.ledger, caller, deps.now())
    command = prepared.command.model_copy(update={"max_output_tokens": admitted.max_output_tokens})
    return dataclasses.replace(prepared, command=command), admitted


def run_admitted(
    prepared: PreparedFormation,
    admitted: AdmittedFormation,
    caller: Caller,
    deps: FormationDeps,
    usage: FormationUsage,
    *,
    before_commit: Callable[[], None] | None = None,
    attempt: int = 1,
) -> FormationReceipt:
    """Run an admitted formation and settle it whether it commits or raises; the receipt.
    `usage` accumulates what it spends (read it after a return or a raise); `attempt`
    numbers a retried run of the same admission (`settle_formation`). Raises what
    `formation.run` raises, after settling."""
    try:
        receipt = formation.run(
            prepared, deps.store, deps.embedder, deps.model, usage=usage,
            before_commit=before_commit,
        )  # fmt: skip
    finally:
        settle_formation(
            deps.ledger,
            admitted,
            scope_id=prepared.command.scope.scope_id,
            caller=caller,
            usage=usage,
            formation_key=prepared.command.formation_key,
            now=deps.now(),
            attempt=attempt,
        )
    return receipt
