"""The formation itself: bounds and replay (`prepare`), then extraction, verification,
reconciliation and one commit (`run`). `use_case` runs them as an operation.

The steps, in order (each its own module):
1. bounds (`command`): turns, formationKey, observedAt, the plan's input cap;
   nothing is spent on a refused request;
2. replay: a committed formationKey with the same fingerprint returns its
   receipt (replay=True) without any model call; another fingerprint is key
   reuse, INVALID_ARGUMENT;
3. rendering with the clock (observedAt, else the receipt time), then
   extraction, one model call (`extraction`);
4. verification in code (`verification`) and structure (`structure`), then
   each fact's claim fields and the claim checks (`claims`, `checks`), then the
   scope's suppression rules (`suppression`: a forgotten fact is REJECTED);
5. reconciliation (`reconciliation`, `verdicts`): identical content KNOWN in
   code, retrieval, at most one more model call, every verdict checked (an
   inference contradicting what the user stated is recorded, not a supersession);
6. candidates touching the same memory (`same_memory`), then the cap on NEW
   candidates (`checks.cap_new`);
7. planning (`planning`) and ONE store.apply (`conflicts`): memory, supersessions,
   reinforcements (claim updates under revision checks), evidence, change-log
   lines, the execution-log step and the formation-key record together. When a
   claim it updates changed in between (REVISION_CHANGED), the plan is built
   again from what the store holds now (no model call), at most MAX_REPLANS
   times, then ABORTED FORMATION_WRITE_CONFLICT: never an overwrite.

No model call and no clock read happens inside the store's transaction: the
clock is read once, on receipt, and everything is computed before the commit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from jennah.domain import rules
from jennah.domain.billing import Spent
from jennah.domain.formation import (
    MAX_CANDIDATES,
    FormationReceipt,
    RenderedConversation,
    Structure,
    fingerprint,
    render,
)
from jennah.domain.models import FormationKeyRecord
from jennah.errors import Aborted, InvalidArgument
from jennah.ports.embedder import Embedder
from jennah.ports.model import LanguageModel
from jennah.ports.store import MemoryStore
from jennah.services import lifecycle
from jennah.services.formation import structure
from jennah.services.formation.candidates import Candidate
from jennah.services.formation.checks import cap_new, check_claims
from jennah.services.formation.claims import zone_of
from jennah.services.formation.command import (
    FormationCommand,
    check_input_cap,
    check_request,
    observed_clock,
    utc,
)
from jennah.services.formation.conflicts import commit_plan, write_conflict
from jennah.services.formation.extraction import entity_classes, extract, extraction_data
from jennah.services.formation.model_calls import CallBounds, FormationUsage
from jennah.services.formation.planning import FormationPlan, PlanContext, build_plan
from jennah.services.formation.reconciliation import (
    SIMILARITY_THRESHOLD,
    gather_neighbours,
    known_in_code,
    reconcile,
)
from jennah.services.formation.same_memory import reject_clashes
from jennah.services.formation.suppression import suppress
from jennah.services.formation.verdicts import VerdictContext
from jennah.services.formation.verification import verify

# Times the formation re-reads and re-plans when a claim it updates changed under it
# (ABORTED REVISION_CHANGED at the commit) before it answers FORMATION_WRITE_CONFLICT.
MAX_REPLANS = 2


@dataclass(frozen=True)
class PreparedFormation:
    """A request within its bounds, rendered, whose formationKey has no receipt yet."""

    command: FormationCommand
    received_at: datetime
    observed_at: datetime | None
    rendered: RenderedConversation
    request_print: str


def prepare(
    command: FormationCommand, store: MemoryStore, received_at: datetime
) -> PreparedFormation | FormationReceipt:
    """Steps 1 and 2, before anything is spent: the bounds (INVALID_ARGUMENT naming the
    bound or field), then the replay of a committed formationKey (its receipt, marked
    as a replay; INVALID_ARGUMENT FORMATION_KEY_REUSED for other turns). A request
    that passes is ready to `run`: admit it against the allowance in between."""
    received_at = utc(received_at)
    check_request(command, received_at)
    observed_at = observed_clock(command.observed_at, received_at)
    rendered = render(command.turns, observed_at or received_at)
    check_input_cap(command, rendered)
    # the observedAt sent, not the clock: a resend with the same body is the same request
    sent = utc(command.observed_at) if command.observed_at is not None else None
    request_print = fingerprint(command.turns, sent)
    replayed = replay(store, command, request_print)
    if replayed is not None:
        return replayed
    return PreparedFormation(command, received_at, observed_at, rendered, request_print)


def run(
    prepared: PreparedFormation,
    store: MemoryStore,
    embedder: Embedder,
    model: LanguageModel,
    *,
    usage: FormationUsage,
    checkpoint: Callable[[], None] | None = None,
    spent_before: Spent | None = None,
    similarity_threshold: float = SIMILARITY_THRESHOLD,
    passes: lifecycle.Passes = lifecycle.INLINE,
) -> FormationReceipt:
    """Steps 3 to 7: the model calls, the checks in code, and ONE commit; the receipt.

    `usage` accumulates what the model calls spent, as they happen (read it after
    `run` returns or raises). `checkpoint`, when given, runs before each model call
    after the first (the reconciliation call) and before the commit: raising there
    makes no further call and writes nothing (a cancelled operation).
    `spent_before` is what earlier attempts of the same formation recorded: the
    receipt's units and tokens are everything the request consumed, theirs and this
    attempt's. A formation that writes no memory still commits its formationKey
    record (so a retry replays the empty receipt) but no execution-log step.
    """
    command = prepared.command
    context = PlanContext(
        command.scope, prepared.rendered, prepared.received_at, prepared.observed_at,
        scope_zone(store, command),
    )  # fmt: skip
    structures = structure.detect(command.turns)
    candidates, dropped = _decide(
        command, context, structures, store, embedder, model, usage, similarity_threshold,
        checkpoint,
    )  # fmt: skip
    before = spent_before or Spent()
    for replan in range(MAX_REPLANS + 1):
        formation = build_plan(candidates, context, store)
        receipt = FormationReceipt(
            candidates=[c.outcome() for c in candidates],
            chunk_supersessions=len(formation.plan.chunk_supersessions),
            edge_supersessions=len(formation.plan.edge_supersessions),
            summarized_structures=structure.summarized(candidates, structures),
            candidates_dropped=dropped,
            candidate_cap=MAX_CANDIDATES,
            execution_log_rows=formation.execution_log_rows,
            formation_units=before.units + usage.units,
            input_tokens=before.input_tokens + usage.input_tokens,
            output_tokens=before.output_tokens + usage.output_tokens,
            formation_key=command.formation_key,
        )
        _add_key_and_registration(formation, command, receipt, prepared.request_print)
        if checkpoint is not None:
            checkpoint()
        try:
            result = commit_plan(store, formation.plan)
        except Aborted as exc:
            if exc.reason != rules.REVISION_CHANGED:
                raise
            if replan == MAX_REPLANS:
                raise write_conflict(exc) from exc
            continue  # another writer changed a claim this plan updates: read it again
        if lifecycle.changes_claims(formation.plan):  # a formation that changed nothing: no pass
            passes(store, command.scope, prepared.received_at)
        return receipt.model_copy(update={"commit_timestamp": result.commit_timestamp})
    raise AssertionError("unreachable: the last re-plan returns or raises")


def scope_zone(store: MemoryStore, command: FormationCommand) -> ZoneInfo:
    """The scope's time zone (its registration's, else the one it would be registered
    with, else UTC): the days validUntil and the change log are counted in."""
    registered = store.get_scope(command.scope) or command.registration
    return zone_of(registered.time_zone if registered is not None else None)


def replay(
    store: MemoryStore, command: FormationCommand, request_print: str
) -> FormationReceipt | None:
    """The committed receipt of the request's formationKey, marked as a replay; None when
    the key is absent or was never committed. INVALID_ARGUMENT on key reuse."""
    key = command.formation_key
    if key is None:
        return None
    record = store.get_formation_key(command.scope, key)
    if record is None:
        return None
    if record.fingerprint != request_print:
        raise InvalidArgument(
            f"formationKey {key[:80]!r} was already used for a different request (other turns "
            "or another observedAt); send a new formationKey to form this conversation",
            reason="FORMATION_KEY_REUSED",
            field="formationKey",
        )
    receipt = FormationReceipt.model_validate_json(record.receipt_json)
    return receipt.model_copy(update={"replay": True, "commit_timestamp": record.committed_at})


def _decide(
    command: FormationCommand,
    context: PlanContext,
    structures: Sequence[list[Structure]],
    store: MemoryStore,
    embedder: Embedder,
    model: LanguageModel,
    usage: FormationUsage,
    similarity_threshold: float,
    checkpoint: Callable[[], None] | None,
) -> tuple[list[Candidate], int]:
    """Extract, verify and reconcile: every kept candidate with its decision."""
    bounds = CallBounds(
        deadline_seconds=command.deadline_seconds,
        max_output_tokens=command.max_output_tokens,
        output_token_budget=command.output_token_budget,
    )
    clock = context.boundary.astimezone(context.zone)  # relative dates are the scope's
    data = extraction_data(command.turns, clock, structures, command.vocabulary)
    extracted, dropped = extract(model, data, bounds, usage)
    candidates = [Candidate(index=i, extracted=e) for i, e in enumerate(extracted)]
    classes = entity_classes(command.vocabulary)
    for candidate in candidates:
        verify(candidate, command.turns, classes)
    structure.mark_preserved(candidates, structures)
    check_claims(candidates, command.turns, context.boundary, context.zone)
    scope, instant = command.scope, context.received_at
    suppress(candidates, store, embedder, scope)
    known_in_code(candidates, store, scope, instant)
    gather_neighbours(candidates, store, embedder, scope, instant, similarity_threshold)
    verdict_context = VerdictContext(scope, instant, context.boundary)
    reconcile(candidates, store, model, verdict_context, bounds, usage, checkpoint=checkpoint)
    reject_clashes(candidates)
    cap_new(candidates)
    return candidates, dropped


def _add_key_and_registration(
    formation: FormationPlan,
    command: FormationCommand,
    receipt: FormationReceipt,
    request_print: str,
) -> None:
    """The formationKey record (its receipt without the commit timestamp, which the
    record's own `committed_at` supplies on replay), and the scope's registration
    when the commit writes anything."""
    plan = formation.plan
    if command.formation_key is not None:
        plan.formation_key = FormationKeyRecord(
            formation_key=command.formation_key,
            fingerprint=request_print,
            receipt_json=receipt.model_dump_json(exclude={"commit_timestamp"}),
        )
    if formation.writes_memory or plan.formation_key is not None:
        plan.registration = command.registration
