"""The claim checks in code (design §4), after verification and before reconciliation,
and the cap on new memories after it.

- Every verified fact gets its claim fields (`claims.assess`).
- A fact about the user ("The user ...", "The user's ...") must cite a turn the user
  wrote (or, its attribution unusable, quote one): else REJECTED. What the assistant
  says about the user is written "The assistant said that the user ...", and that is
  the assistant's claim, kept as an inference.
- A hard rule (strength hard) or an explicit instruction (authority user_explicit)
  must cite a user-authored turn and no tool turn. One that does not is DOWNGRADED,
  not dropped: strength soft, authority user_stated when a user turn supports it,
  inferred otherwise. The words may still be worth keeping; they just cannot bind the
  agent as a rule. (Words found only in tool output never get this far: verification
  rejects them.)
- A confidence bar, higher for an inference than for what the user said:
  MIN_CONFIDENCE_INFERRED and MIN_CONFIDENCE_STATED (user_stated and user_explicit).
  A fact under its bar is REJECTED naming both.
- At most MAX_NEW_CANDIDATES candidates of one formation are NEW (facts and
  relationships): past the cap, the lowest in weight (authority: explicit, stated,
  inferred; then confidence; then extraction order, relationships last) are REJECTED
  naming the cap. Extraction's own cap (MAX_CANDIDATES, `candidatesDropped`) applies
  first, to everything extracted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from zoneinfo import ZoneInfo

from jennah.domain.formation import Decision, Turn, TurnRole
from jennah.domain.models import Authority, Strength
from jennah.services.formation import claims
from jennah.services.formation.candidates import Candidate

MIN_CONFIDENCE_STATED = 0.3
MIN_CONFIDENCE_INFERRED = 0.6
MAX_NEW_CANDIDATES = 32
_RANK = {Authority.USER_EXPLICIT: 0, Authority.USER_STATED: 1, Authority.INFERRED: 2}
_SPOKEN = frozenset({TurnRole.USER, TurnRole.ASSISTANT})


def check_claims(
    candidates: Sequence[Candidate], turns: Sequence[Turn], clock: datetime, zone: ZoneInfo
) -> None:
    """Assess every undecided fact's claim fields, then apply the checks in place."""
    for candidate in candidates:
        if candidate.undecided and candidate.is_fact:
            _check(candidate, turns, clock, zone)


def _check(candidate: Candidate, turns: Sequence[Turn], clock: datetime, zone: ZoneInfo) -> None:
    extracted, cited = candidate.extracted, candidate.source_turns
    candidate.memory_type = claims.refined_type(candidate.memory_type, extracted.text)
    claim = claims.assess(extracted, candidate.memory_type, cited, turns, clock, zone)
    by_user = claims.user_cited(cited, extracted.quote, turns)
    if claims.about_the_user(extracted.text) and not by_user:
        candidate.reject(
            "it is a fact about the user, but no turn the user wrote supports it: what "
            "the assistant says about the user is the assistant's claim"
        )
        return
    from_tool = cited is not None and any(turns[i].role not in _SPOKEN for i in cited)
    binding = claim.strength is Strength.HARD or claim.authority is Authority.USER_EXPLICIT
    if binding and (from_tool or not by_user):
        claim = replace(
            claim,
            strength=Strength.SOFT,
            authority=Authority.USER_STATED if by_user else Authority.INFERRED,
        )
    candidate.claim = claim
    bar = (
        MIN_CONFIDENCE_INFERRED if claim.authority is Authority.INFERRED else MIN_CONFIDENCE_STATED
    )
    if claim.confidence < bar:
        candidate.reject(
            f"its confidence {claim.confidence:.2f} is under the bar of {bar:.2f} for "
            f"{claim.authority.value} memory (inferred {MIN_CONFIDENCE_INFERRED:.2f}, "
            f"stated {MIN_CONFIDENCE_STATED:.2f})"
        )


def cap_new(candidates: Sequence[Candidate], cap: int = MAX_NEW_CANDIDATES) -> None:
    """Reject the NEW candidates past `cap`, lowest weight first (see the module doc)."""
    new = [c for c in candidates if c.decision is Decision.NEW]
    if len(new) <= cap:
        return
    for candidate in sorted(new, key=_weight)[cap:]:
        candidate.reject(
            f"one formation adds at most {cap} new memories; {len(new)} were new and this "
            "one weighs least"
        )


def _weight(candidate: Candidate) -> tuple[int, float, int, int]:
    claim = candidate.claim
    if claim is None:  # a relationship
        return (len(_RANK), 0.0, 1, candidate.index)
    return (_RANK.get(claim.authority, len(_RANK)), -claim.confidence, 0, candidate.index)
