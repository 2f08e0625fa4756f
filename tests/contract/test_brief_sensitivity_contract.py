"""Contract: health, finances and minors claims NEVER enter the brief (design §6 "Safe by
construction", §10 "Careful with sensitive topics"), on both stores.

The sensitivity vocabulary is models.Sensitivity: normal, health, finances, minors (the
wire's SensitivityName; formation tags by words, services/formation/claims.py). Each
non-normal label is tried in every place a claim could reach a brief: Identity (a pinned
identity, a relationship), Directives (a hard, explicit directive; a pinned preference),
the Topic index (a type only sensitive claims have, an `about` only they have, and the
counts), Last conversation (a claim formed and one reinforced in the latest formation),
and the expiries (a validUntil). Both variants, the stored brief (compiled by the pass a
write triggers) and one compiled on the fly when none is stored; and through the real
formation pipeline, where the words decide the label. Each scenario also holds normal
twins that must show, so a brief that dropped everything would fail too.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from jennah.domain import rules
from jennah.domain.formation import SOURCE_STEP
from jennah.domain.models import (
    Authority,
    BriefVariant,
    CommitPlan,
    Evidence,
    MemoryRecord,
    MemoryType,
    ScopeRecord,
    ScopeRef,
    Sensitivity,
    Status,
    Strength,
)
from jennah.ports.store import MemoryStore
from jennah.services import lifecycle
from jennah.services.brief import read_brief
from tests.contract.conftest import EMBEDDER, NOW, new_scope
from tests.contract.formation_support import extraction, fact, run, scripted, user

SENSITIVE = [s for s in Sensitivity if s is not Sensitivity.NORMAL]
OLD_STEP, LAST_STEP = "frm_" + "1" * 32, "frm_" + "2" * 32


def test_the_sensitivity_vocabulary_is_normal_health_finances_minors() -> None:
    assert [s.value for s in Sensitivity] == ["normal", "health", "finances", "minors"]


def claim(scope: ScopeRef, text: str, about: str = "", **fields: Any) -> MemoryRecord:
    return MemoryRecord(
        id=rules.chunk_id(text, None),
        scope=scope,
        text=text,
        summary=f"{text} (summary)",
        about=about,
        content_hash=rules.content_hash(text),
        embedding=EMBEDDER.embed(text),
        **fields,
    )


def line(scope: ScopeRef, memory_id: str, step: str, minutes: int) -> Evidence:
    return Evidence(
        memory_id=memory_id,
        ref=f"conv://{scope.scope_id}/{step}#turn=1-1",
        quote="words",
        recorded_at=NOW + timedelta(minutes=minutes),
    )


def scenario(scope: ScopeRef, label: Sensitivity) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
    """(sensitive claims, their normal twins) reaching every section of the brief."""
    tag = label.value
    sensitive = [
        claim(scope, f"Zed-{tag} is the eldest", type=MemoryType.IDENTITY, pin=True),
        claim(scope, f"Zed-{tag} is Sam's child", type=MemoryType.RELATIONSHIP),
        claim(scope, f"Always ask Zed-{tag} first", type=MemoryType.DIRECTIVE,
              strength=Strength.HARD, authority=Authority.USER_EXPLICIT, pin=True),
        claim(scope, f"Zed-{tag} prefers mornings", type=MemoryType.PREFERENCE, pin=True,
              about=f"Zedtopic {tag}"),
        claim(scope, f"Zed-{tag} appointment Friday", type=MemoryType.FACT,
              about=f"Zedtopic {tag}", valid_until=NOW + timedelta(days=2)),
        claim(scope, f"Zed-{tag} formed last", type=MemoryType.FACT,
              metadata={SOURCE_STEP: LAST_STEP}),
        claim(scope, f"Zed-{tag} reinforced last", type=MemoryType.FACT,
              metadata={SOURCE_STEP: OLD_STEP}, reinforcement_count=1,
              last_reinforced_at=NOW + timedelta(minutes=10)),
    ]  # fmt: skip
    normal = [
        claim(scope, "Sam is the dad", type=MemoryType.IDENTITY, pin=True),
        claim(scope, "Ask before posting to the team chat", type=MemoryType.DIRECTIVE,
              strength=Strength.HARD, authority=Authority.USER_EXPLICIT, about="Soccer"),
        claim(scope, "Practice moved to Thursday", type=MemoryType.FACT, about="Soccer",
              metadata={SOURCE_STEP: LAST_STEP}),
    ]  # fmt: skip
    return [c.model_copy(update={"sensitivity": label}) for c in sensitive], normal


def seed(store: MemoryStore, scope: ScopeRef, sensitive: list[MemoryRecord],
         normal: list[MemoryRecord]) -> None:  # fmt: skip
    formed = [c for c in (*sensitive, *normal) if SOURCE_STEP in c.metadata]
    evidence = [line(scope, c.id, c.metadata[SOURCE_STEP], 0 if c.metadata[SOURCE_STEP]
                     == OLD_STEP else 10) for c in formed]  # fmt: skip
    evidence += [line(scope, c.id, LAST_STEP, 10) for c in sensitive if c.last_reinforced_at]
    store.apply(CommitPlan(scope=scope, registration=ScopeRecord(scope=scope, kind="agent"),
                           chunks=[*sensitive, *normal], evidence=evidence))  # fmt: skip


def assert_kept_out(text: str, scope: ScopeRef, sensitive: list[MemoryRecord],
                    normal: list[MemoryRecord]) -> None:  # fmt: skip
    for c in sensitive:
        for shown in (c.id, c.text, c.summary, c.about or c.id):
            assert shown not in text, f"{c.sensitivity.value} claim {c.text!r}: {shown!r} shown"
    assert "Zed" not in text and "preference" not in text
    for c in normal:  # the fact is shown in Last conversation only, which `shared` leaves out
        if c.type is not MemoryType.FACT or "## Last conversation" in text:
            assert f"memory://{scope.scope_id}/{c.id}" in text, f"{c.text!r} missing"
    # the counts are the normal claims' only
    assert "- identity: 1\n" in text and "- directive: 1\n" in text and "- fact: 1\n" in text
    assert "relationship" not in text


@pytest.mark.parametrize("label", SENSITIVE, ids=[s.value for s in SENSITIVE])
def test_a_sensitive_claim_never_reaches_any_section_of_the_brief(
    store: MemoryStore, label: Sensitivity
) -> None:
    scope = new_scope()
    sensitive, normal = scenario(scope, label)
    seed(store, scope, sensitive, normal)
    on_the_fly = {v: read_brief(store, scope, v, NOW).text for v in BriefVariant}
    lifecycle.pass_inline(store, scope, NOW)
    for variant in BriefVariant:
        stored = store.get_brief(scope, variant)
        assert stored is not None
        assert not set(stored.expiries) & {c.id for c in sensitive}
        for text in (stored.text, read_brief(store, scope, variant, NOW).text,
                     on_the_fly[variant]):  # fmt: skip
            assert_kept_out(text, scope, sensitive, normal)
    full = store.get_brief(scope, BriefVariant.FULL)
    assert full is not None
    last = full.text.split(f"## Last conversation conv://{scope.scope_id}/{LAST_STEP}\n")[1]
    assert last.startswith('- (formed) "Practice moved to Thursday (summary)" memory://')
    assert last.split("\n")[1] == "</memory-brief>"  # the sensitive ones left no line


def test_a_claim_turning_sensitive_leaves_the_brief_at_once(store: MemoryStore) -> None:
    scope = new_scope()
    pinned = claim(scope, "Zed is pinned", type=MemoryType.IDENTITY, pin=True)
    _, normal = scenario(scope, Sensitivity.HEALTH)
    seed(store, scope, [], [pinned, *normal])
    lifecycle.pass_inline(store, scope, NOW)
    assert pinned.id in read_brief(store, scope, BriefVariant.FULL, NOW).text
    relabelled = pinned.model_copy(update={"sensitivity": Sensitivity.MINORS})
    store.apply(CommitPlan(scope=scope, chunks=[relabelled]))  # a replace: same id
    lifecycle.pass_inline(store, scope, NOW)
    for variant in BriefVariant:
        assert pinned.id not in read_brief(store, scope, variant, NOW).text


def test_formation_tags_sensitive_words_and_the_last_conversation_leaves_them_out(
    store: MemoryStore,
) -> None:
    scope = new_scope()
    said = ("Practice moved to Thursday. I take insulin for my diabetes. My salary is 90k. "
            "My son Leo is nine.")  # fmt: skip
    model = scripted(
        extraction(
            fact("Practice moved to Thursday.", [0], "Practice moved to Thursday."),
            fact("The user takes insulin for diabetes.", [0], "I take insulin for my diabetes."),
            fact("The user's salary is 90k.", [0], "My salary is 90k."),
            fact("The user's son Leo is nine.", [0], "My son Leo is nine."),
        )
    )
    run(store, scope, [user(said)], model)
    formed = store.list_claims(scope, [Status.ACTIVE], None, 100)
    labels = {c.text: c.sensitivity for c in formed}
    assert labels == {
        "Practice moved to Thursday.": Sensitivity.NORMAL,
        "The user takes insulin for diabetes.": Sensitivity.HEALTH,
        "The user's salary is 90k.": Sensitivity.FINANCES,
        "The user's son Leo is nine.": Sensitivity.MINORS,
    }
    full = read_brief(store, scope, BriefVariant.FULL, NOW).text
    assert store.get_brief(scope, BriefVariant.FULL) is not None  # the pass compiled it
    last = full.split(f"## Last conversation conv://{scope.scope_id}/frm_")[1].split("\n")
    assert last[1].startswith('- (formed) "Practice moved to Thursday." memory://')
    assert last[2] == "</memory-brief>"
    for c in formed:
        if c.sensitivity is not Sensitivity.NORMAL:
            for variant in BriefVariant:
                text = read_brief(store, scope, variant, NOW).text
                assert c.id not in text and c.text.rstrip(".") not in text
    for word in ("insulin", "diabetes", "salary", "90k", "Leo", "son"):
        assert word not in full.replace("Thursday", "")
