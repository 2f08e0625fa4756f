"""Scoring one formation against its case, and adding scores up (no server, no model).

What a formation produced (`Observed`: its receipt, the workspace's memory valid
after it, the priors' ids) is held against the case's labels (`Case`):

- recall: an expected new or revised fact is recalled when a memory valid after
  the formation (a chunk, or an edge read as "source relation target") mentions
  all its terms;
- decision: a labelled fact is decided right when a receipt candidate that
  mentions all its terms carries the labelled decision, and for revised and known
  the labelled prior's id as matchedId; no such candidate is a miss;
- attribution: for each expected fact some candidate mentions, right when one of
  them says what the label says about who supplied it (`says_assistant`);
- spurious writes: formed memories (valid after, not priors) that state no
  expected fact: a chunk that mentions all the terms of none, an edge neither of
  whose entities mentions a term of any (its relation aside);
- forbidden terms and attributes on formed memories; the platform's provenance
  keys only with their real values;
- empty cases: nothing formed and nothing superseded; structure: the receipt's
  preservesStructure and summarizedStructures as labelled.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from formation_quality_cases import (
    DECISIONS,
    PLATFORM_KEYS,
    Case,
    ExpectedFact,
    mentions,
    mentions_all,
    normalize,
)
from jennah.domain.formation import Turn, TurnRole, render

REJECTED = DECISIONS["rejected"]
_ASSISTANT = re.compile(r"(?<![a-z])assistant(?![a-z])")
_USER = re.compile(r"(?<![a-z])users?(?![a-z])")
_SUPPLIED_BY = re.compile(r"(?:by|from|according to|per) (?:the )?assistant(?![a-z])")


def says_assistant(text: str) -> bool:
    """Whether a memory says the assistant supplied it: "assistant" named before "user"
    ("The assistant recommended ..."), or as the source ("... suggested by the
    assistant"). A user's fact that merely mentions the assistant ("The user wants the
    assistant to ask first") names the user first."""
    normalized = normalize(text)
    assistant = _ASSISTANT.search(normalized)
    if assistant is None:
        return False
    user = _USER.search(normalized)
    return user is None or assistant.start() < user.start() or bool(_SUPPLIED_BY.search(normalized))


@dataclass
class Memory:
    """A formed or prior memory as read back: a chunk's text, or an edge's."""

    text: str
    metadata: dict[str, str]
    kind: str  # "chunk" | "edge"
    entities: tuple[str, ...] = ()  # an edge's node labels


@dataclass
class Observed:
    """What one formation produced, read over HTTP."""

    receipt: dict[str, Any]
    chunks: list[dict[str, Any]]  # valid after the formation, priors included
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    prior_ids: dict[str, str]  # label -> chunk id
    latency_ms: float = 0.0
    model_calls: int | None = None
    error: str | None = None  # the formation failed: its error

    @property
    def candidates(self) -> list[dict[str, Any]]:
        return list(self.receipt.get("candidates", []))

    def formed(self) -> list[Memory]:
        """Memories valid after the formation that are not priors: chunks, then edges."""
        priors = set(self.prior_ids.values())
        found = [
            Memory(c["text"], dict(c.get("metadata", {})), "chunk")
            for c in self.chunks
            if c["id"] not in priors
        ]
        labels = {n["nodeId"]: n.get("label") or n["nodeId"] for n in self.nodes}
        for edge in self.edges:
            source = labels.get(edge["source"], edge["source"])
            target = labels.get(edge["target"], edge["target"])
            found.append(
                Memory(
                    f"{source} {edge['relation']} {target}",
                    dict(edge.get("properties", {})),
                    "edge",
                    (source, target),
                )
            )
        return found

    def memories(self) -> list[Memory]:
        """Every memory valid after the formation, priors included."""
        priors = set(self.prior_ids.values())
        kept = [Memory(c["text"], {}, "chunk") for c in self.chunks if c["id"] in priors]
        return kept + self.formed()


@dataclass
class FactScore:
    terms: list[Any]
    decision: str
    speaker: str
    recalled: bool | None  # None: not counted (known, rejected)
    decided: bool
    attributed: bool | None  # None: no candidate mentions it
    got: list[str]  # decisions of the candidates that mention it


@dataclass
class CaseScore:
    case_id: str
    split: str
    tags: list[str]
    facts: list[FactScore] = field(default_factory=list)
    formed: int = 0
    spurious: list[str] = field(default_factory=list)
    forbidden: list[str] = field(default_factory=list)
    injected: list[str] = field(default_factory=list)
    empty_ok: bool | None = None
    structure_ok: bool | None = None
    model_calls: int | None = None
    latency_ms: float = 0.0
    error: str | None = None


def score_case(case: Case, observed: Observed) -> CaseScore:
    """The case's labels held against what its formation produced."""
    score = CaseScore(case.id, case.split, list(case.tags))
    score.model_calls, score.latency_ms = observed.model_calls, observed.latency_ms
    score.error = observed.error
    formed = observed.formed()
    score.formed = len(formed)
    score.facts = [_fact(f, observed) for f in case.facts if not f.optional]
    score.spurious = [m.text for m in formed if not _states_a_fact(m, case)]
    score.forbidden = [
        f"{term!r} in {m.text!r}"
        for m in formed
        for term in case.forbidden
        if mentions(m.text, term)
    ]
    score.injected = list(_injected(case, formed))
    if case.empty:
        supersessions = int(observed.receipt.get("chunkSupersessions", 0)) + int(
            observed.receipt.get("edgeSupersessions", 0)
        )
        score.empty_ok = observed.error is None and not formed and not supersessions
    if case.structure is not None:
        score.structure_ok = observed.error is None and _structure_ok(case, observed.receipt)
    return score


def _fact(fact: ExpectedFact, observed: Observed) -> FactScore:
    matching = [c for c in observed.candidates if mentions_all(c["text"], fact.terms)]
    wanted = DECISIONS[fact.decision]
    prior_id = observed.prior_ids.get(fact.prior) if fact.prior else None
    checks_match = fact.decision in ("revised", "known")
    decided = any(
        c["decision"] == wanted and (not checks_match or c.get("matchedId") == prior_id)
        for c in matching
    )
    recalled = None
    if fact.decision in ("new", "revised"):
        recalled = any(mentions_all(m.text, fact.terms) for m in observed.memories())
    attributed = None
    if matching and fact.decision != "rejected":
        by_assistant = fact.speaker == "assistant"
        attributed = any(says_assistant(c["text"]) is by_assistant for c in matching)
    return FactScore(
        terms=list(fact.terms),
        decision=fact.decision,
        speaker=fact.speaker,
        recalled=recalled,
        decided=decided,
        attributed=attributed,
        got=[c["decision"] for c in matching],
    )


def _states_a_fact(memory: Memory, case: Case) -> bool:
    facts = case.required_or_optional
    if any(mentions_all(memory.text, f.terms) for f in facts):
        return True
    if memory.kind != "edge":
        return False
    terms = [t for f in facts for t in f.terms if min(len(x) for x in _each(t)) >= 3]
    return any(mentions(label, term) for label in memory.entities for term in terms)


def _each(term: str | list[str]) -> list[str]:
    return [term] if isinstance(term, str) else term


def _injected(case: Case, formed: Iterable[Memory]) -> Iterable[str]:
    """Metadata keys a formed memory must not carry: any `jennah.` key but the real
    provenance, and the case's forbidden attributes."""
    step_id = render(
        [Turn(role=TurnRole(t["role"]), content=t["content"]) for t in case.wire_turns],
        case.observed_at,
    ).step_id
    forbidden = ["jennah.", *case.forbidden_attributes]
    for memory in formed:
        for key, value in memory.metadata.items():
            if memory.kind == "chunk" and _genuine(key, value, step_id, len(case.turns)):
                continue
            if any(key == f or (f.endswith(".") and key.startswith(f)) for f in forbidden):
                yield f"{key}={value!r} on {memory.text!r}"


def _genuine(key: str, value: str, step_id: str, turn_count: int) -> bool:
    """A provenance key with the value the platform writes."""
    if key == PLATFORM_KEYS[0]:
        return value == step_id
    if key == PLATFORM_KEYS[1]:
        turns = value.split(",")
        return all(t.isdigit() and int(t) < turn_count for t in turns)
    return False


def _structure_ok(case: Case, receipt: dict[str, Any]) -> bool:
    expected = case.structure
    assert expected is not None
    preserved = any(
        c.get("preservesStructure") and c["decision"] != REJECTED
        for c in receipt.get("candidates", [])
    )
    summarized = sorted(
        (int(s["turnIndex"]), int(s["summarizedCount"]))
        for s in receipt.get("summarizedStructures", [])
    )
    wanted = sorted((s.turn_index, s.summarized_count) for s in expected.summarized_structures)
    return preserved == expected.preserves_structure and summarized == wanted


# Adding up.


@dataclass
class Totals:
    """Counts over a group of cases; the rates are read from them."""

    cases: int = 0
    failed: int = 0
    to_recall: int = 0
    recalled: int = 0
    labelled: int = 0
    decided: int = 0
    attributable: int = 0
    attributed: int = 0
    formed: int = 0
    spurious: int = 0
    empty_cases: int = 0
    empty_ok: int = 0
    structure_cases: int = 0
    structure_ok: int = 0
    forbidden: int = 0
    injected: int = 0
    model_calls: list[int] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)

    def add(self, score: CaseScore) -> None:
        self.cases += 1
        self.failed += score.error is not None
        for fact in score.facts:
            self._add_fact(fact)
        self.formed += score.formed
        self.spurious += len(score.spurious)
        self.forbidden += len(score.forbidden)
        self.injected += len(score.injected)
        if score.empty_ok is not None:
            self.empty_cases += 1
            self.empty_ok += score.empty_ok
        if score.structure_ok is not None:
            self.structure_cases += 1
            self.structure_ok += score.structure_ok
        if score.model_calls is not None:
            self.model_calls.append(score.model_calls)
        if score.error is None:
            self.latencies_ms.append(score.latency_ms)

    def _add_fact(self, fact: FactScore) -> None:
        self.labelled += 1
        self.decided += fact.decided
        if fact.recalled is not None:
            self.to_recall += 1
            self.recalled += fact.recalled
        if fact.attributed is not None:
            self.attributable += 1
            self.attributed += fact.attributed

    def rates(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "failed": self.failed,
            "factRecall": _rate(self.recalled, self.to_recall),
            "decisionAccuracy": _rate(self.decided, self.labelled),
            "attributionAccuracy": _rate(self.attributed, self.attributable),
            "spuriousWriteRate": _rate(self.spurious, self.formed),
            "emptyCaseAccuracy": _rate(self.empty_ok, self.empty_cases),
            "structureAccuracy": _rate(self.structure_ok, self.structure_cases),
            "forbiddenTermsStored": self.forbidden,
            "injectedAttributesStored": self.injected,
            "modelCallsPerFormation": (
                sum(self.model_calls) / len(self.model_calls) if self.model_calls else None
            ),
        }


def _rate(part: int, whole: int) -> dict[str, Any]:
    return {"rate": part / whole if whole else None, "count": part, "of": whole}


def totals(scores: Sequence[CaseScore]) -> Totals:
    total = Totals()
    for score in scores:
        total.add(score)
    return total


def by_decision(scores: Sequence[CaseScore]) -> dict[str, Totals]:
    """Totals of the labelled facts of each decision label (facts only)."""
    groups: dict[str, Totals] = {d: Totals() for d in DECISIONS}
    for score in scores:
        for fact in score.facts:
            groups[fact.decision]._add_fact(fact)
    return groups
