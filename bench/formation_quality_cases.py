"""The formation-quality evaluation set: its case schema, loading, and term matching.

Each case is one YAML file in `bench/formation_quality/` (the schema is documented in
that folder's README.md). `load_cases` parses every file against the schema and then
checks what a schema alone cannot: labels that name priors that exist, expected facts
that no prior already states, dates in the right order for revisions and chronology
rejections, structure expectations that name turns holding a table or code block.
A case that fails any check raises `CaseError` naming the file and the fault, so a
broken label fails CI (tests/unit/test_formation_quality_set.py) before any run.

No server and no model here: the runner (`formation_quality.py`) imports this.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from jennah.domain.formation import detect_structures

CASES_DIR = Path(__file__).resolve().parent / "formation_quality"
SPLITS = ("tune", "holdout", "holdout2", "tune2", "holdout3", "tune3", "holdout4")
# The splits that cover every coverage tag. `tune2` (117-130) is a supplement to tune on
# one theme, hard constraints (allergies, diets, accessibility, standing rules): it is
# tuned on like `tune` and need not cover every kind of case. `holdout3` (131-144) is a
# held-out split on the same theme, never tuned on: it need not cover them either.
# `tune3` (145-160) is a second tuning supplement on that theme, in wordings tune2 does
# not use (a symptom for "allergy", medical and religious diets by their rules, access
# needs, "please don't" / "only ever").
# `holdout4` (161-184) is a fresh held-out split over every kind of case, written on
# 2026-12-02 without reading the formation code or its prompts, never tuned on: it
# covers every coverage tag.
COVERING_SPLITS = ("tune", "holdout", "holdout2", "holdout4")
ROLES = {
    "user": "TURN_ROLE_USER",
    "assistant": "TURN_ROLE_ASSISTANT",
    "tool_call": "TURN_ROLE_TOOL_CALL",
    "tool_result": "TURN_ROLE_TOOL_RESULT",
}
DECISIONS = {
    "new": "MEMORY_DECISION_NEW",
    "revised": "MEMORY_DECISION_REVISED",
    "known": "MEMORY_DECISION_KNOWN",
    "rejected": "MEMORY_DECISION_REJECTED",
}
# What the set must cover, several cases each, in both splits.
COVERAGE_TAGS = (
    "multi-fact",
    "revision",
    "negation",
    "known",
    "chronology",
    "chitchat",
    "assistant",
    "tool-output",
    "table",
    "code",
    "relative-date",
    "injection",
    "double-revision",
    "health",
    "sensitive",
    "preference",
    "directive",
    "relationship",
    "family",
    "employer",
)
# Further tags: the domain a conversation is about, and a few finer kinds.
DOMAIN_TAGS = (
    "priya",
    "identity",
    "work",
    "travel",
    "food",
    "finance",
    "home",
    "education",
    "tech",
    "fitness",
    "shopping",
    "pets",
    "legal",
    "empty",
    "structure",
    "artifact",
    "restatement",
    "historical",
)
TAGS = frozenset(COVERAGE_TAGS + DOMAIN_TAGS)
MAX_TURNS = 8
# Metadata keys the platform writes on every formed fact (spec: Provenance). They are
# the only `jennah.` keys a formed memory may carry, and only with their real values.
PLATFORM_KEYS = ("jennah.source_step", "jennah.source_turns")

_ID = re.compile(r"^\d{3}-[a-z0-9]+(?:-[a-z0-9]+)*$")
_LABEL = re.compile(r"^[a-z][a-z0-9_]*$")
_DATE_TERM = re.compile(r"^date:(\d{4}-\d{2}-\d{2})$")
_MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip


class CaseError(ValueError):
    """A case file that does not hold to the schema or to its cross-checks."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


def _lowercase_term(value: str) -> str:
    if not value.strip() or value != value.strip():
        raise ValueError(f"term {value!r} must be non-empty, without surrounding spaces")
    if value != value.lower():
        raise ValueError(f"term {value!r} must be lowercase")
    found = _DATE_TERM.match(value)
    if found:
        date.fromisoformat(found[1])
    return value


TermText = Annotated[str, AfterValidator(_lowercase_term)]
# A term is a word or phrase, or a list of alternatives any one of which will do.
Term = TermText | Annotated[list[TermText], Field(min_length=2)]


MemoryTypeName = Literal[
    "fact", "preference", "directive", "identity", "constraint", "relationship"
]
SensitivityName = Literal["health", "financial", "religion", "legal", "family", "location"]


class CaseTurn(_Strict):
    role: Literal["user", "assistant", "tool_call", "tool_result"]
    content: str = Field(min_length=1)

    @property
    def wire(self) -> dict[str, str]:
        return {"role": ROLES[self.role], "content": self.content}


class Prior(_Strict):
    """A memory committed (memory:commit) before the formation."""

    label: str
    text: str = Field(min_length=1)
    valid_at: datetime | None = Field(default=None, alias="validAt")
    metadata: dict[str, str] = Field(default_factory=dict)

    @field_validator("label")
    @classmethod
    def _label(cls, value: str) -> str:
        if not _LABEL.match(value):
            raise ValueError(f"label {value!r} must be lowercase letters, digits and '_'")
        return value

    @property
    def wire(self) -> dict[str, object]:
        chunk: dict[str, object] = {"text": self.text}
        if self.metadata:
            chunk["metadata"] = self.metadata
        if self.valid_at is not None:
            chunk["validAt"] = self.valid_at.isoformat()
        return chunk


class ExpectedFact(_Strict):
    """A fact a correct formation reports in its receipt, and (new, revised) stores."""

    terms: list[Term] = Field(min_length=1)
    speaker: Literal["user", "assistant"] = "user"
    decision: Literal["new", "revised", "known", "rejected"]
    prior: str | None = Field(
        default=None,
        description="The prior's label: the one a revision retires, the one a known fact "
        "restates, or (optional) the newer one a chronology rejection protects",
    )
    type: MemoryTypeName | None = None
    sensitivity: SensitivityName | None = None
    optional: bool = Field(
        default=False,
        description="Not required for recall; a memory stating it is not a spurious write",
    )

    @model_validator(mode="after")
    def _prior_where_needed(self) -> ExpectedFact:
        if self.decision in ("revised", "known") and self.prior is None:
            raise ValueError(f"a {self.decision} fact names the prior it matches (prior:)")
        if self.decision == "new" and self.prior is not None:
            raise ValueError("a new fact names no prior")
        return self


class SummarizedStructure(_Strict):
    turn_index: int = Field(alias="turnIndex", ge=0)
    summarized_count: int = Field(alias="summarizedCount", ge=1)


class StructureExpectation(_Strict):
    """What the receipt reports about the tables and code blocks of the turns."""

    preserves_structure: bool = Field(alias="preservesStructure")
    summarized_structures: list[SummarizedStructure] = Field(
        default_factory=list, alias="summarizedStructures"
    )


class Case(_Strict):
    id: str
    split: Literal["tune", "holdout", "holdout2", "tune2", "holdout3", "tune3", "holdout4"]
    tags: list[str] = Field(min_length=1)
    description: str = Field(min_length=1)
    observed_at: datetime = Field(alias="observedAt")
    turns: list[CaseTurn] = Field(min_length=1, max_length=MAX_TURNS)
    priors: list[Prior] = Field(default_factory=list)
    facts: list[ExpectedFact] = Field(default_factory=list)
    forbidden: list[TermText] = Field(default_factory=list)
    forbidden_attributes: list[str] = Field(default_factory=list)
    structure: StructureExpectation | None = None
    empty: bool = False

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError(f"id {value!r} must be NNN-lowercase-words (e.g. 001-priya-intro)")
        return value

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - TAGS)
        if unknown:
            raise ValueError(f"unknown tags {unknown}; known: {sorted(TAGS)}")
        if len(set(value)) != len(value):
            raise ValueError("a tag is listed twice")
        return value

    @field_validator("observed_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("observedAt needs a time zone (such as Z)")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Case:
        for check in (_check_priors, _check_facts, _check_empty, _check_structure):
            check(self)
        for term in self.forbidden:
            for fact in self.required_or_optional:
                if any(term in _alternatives(t) for t in fact.terms):
                    raise ValueError(f"forbidden term {term!r} is also an expected fact's term")
        return self

    @property
    def wire_turns(self) -> list[dict[str, str]]:
        return [turn.wire for turn in self.turns]

    @property
    def required_or_optional(self) -> list[ExpectedFact]:
        """Expected facts that belong in memory (every decision but rejected)."""
        return [f for f in self.facts if f.decision != "rejected"]


def _check_priors(case: Case) -> None:
    labels = [p.label for p in case.priors]
    if len(set(labels)) != len(labels):
        raise ValueError("two priors share a label")
    texts = [p.text for p in case.priors]
    if len(set(texts)) != len(texts):
        raise ValueError("two priors share a text (they would be one chunk)")
    for prior in case.priors:
        if prior.valid_at is not None and prior.valid_at.tzinfo is None:
            raise ValueError(f"prior {prior.label}: validAt needs a time zone")


def _check_facts(case: Case) -> None:
    priors = {p.label: p for p in case.priors}
    for index, fact in enumerate(case.facts):
        where = f"facts[{index}] {fact.terms}"
        prior = priors.get(fact.prior) if fact.prior is not None else None
        if fact.prior is not None and prior is None:
            raise ValueError(f"{where}: no prior is labelled {fact.prior!r}")
        if fact.speaker == "assistant" and not any(t.role == "assistant" for t in case.turns):
            raise ValueError(f"{where}: speaker assistant, but no assistant turn")
        if fact.decision == "known":
            assert prior is not None
            if not mentions_all(prior.text, fact.terms):
                raise ValueError(f"{where}: known, but prior {prior.label!r} lacks its terms")
        elif any(mentions_all(p.text, fact.terms) for p in case.priors):
            raise ValueError(f"{where}: {fact.decision}, but a prior already states its terms")
        if fact.decision == "revised":
            assert prior is not None
            if prior.valid_at is not None and prior.valid_at >= case.observed_at:
                raise ValueError(f"{where}: revised, but its prior is not older than observedAt")
        newer = (
            prior is not None and prior.valid_at is not None and prior.valid_at > case.observed_at
        )
        if fact.decision == "rejected" and prior is not None and not newer:
            raise ValueError(f"{where}: a chronology rejection needs a newer prior")


def _check_empty(case: Case) -> None:
    writes = [f for f in case.facts if f.decision in ("new", "revised")]
    if case.empty and writes:
        raise ValueError("empty: true, but a fact is expected to be new or revised")
    if not case.empty and not any(not f.optional for f in case.facts) and case.structure is None:
        raise ValueError("no required fact, no structure expectation: mark the case empty")


def _check_structure(case: Case) -> None:
    detected = [len(detect_structures(t.content)) for t in case.turns]
    expectation = case.structure
    if expectation is None:
        if any(detected):
            raise ValueError("a turn holds a table or code block: add a structure expectation")
        return
    if not any(detected):
        raise ValueError("structure expected, but no turn holds a table or fenced code block")
    for item in expectation.summarized_structures:
        if item.turn_index >= len(case.turns):
            raise ValueError(f"summarizedStructures: no turn {item.turn_index}")
        if item.summarized_count > detected[item.turn_index]:
            raise ValueError(
                f"summarizedStructures: turn {item.turn_index} holds only "
                f"{detected[item.turn_index]} table(s) or code block(s)"
            )


# Term matching.


def normalize(text: str) -> str:
    """Lowercase, apostrophes and word-final full stops dropped ("St. Mary's" reads
    "st marys"), underscores as spaces, whitespace collapsed."""
    text = text.lower().replace("\u2019", "'").replace("'", "").replace("_", " ")
    return " ".join(re.sub(r"\.(?=\s|$)", " ", text).split())


def _alternatives(term: str | list[str]) -> list[str]:
    return [term] if isinstance(term, str) else list(term)


def date_forms(day: date) -> list[str]:
    """The ways a memory may write a date: ISO, "11 march", "march 11th", "11th of march"..."""
    month = _MONTHS[day.month - 1]
    short = month[:3]
    n = day.day
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    forms = [day.isoformat()]
    for name in dict.fromkeys((month, short)):
        forms += [f"{n} {name}", f"{n}{suffix} {name}", f"{n}{suffix} of {name}"]
        forms += [f"{name} {n}{suffix}", f"{name} {n}"]
    return forms


def _pattern(term: str) -> re.Pattern[str]:
    """A term matches at the start of a word; a date term in any of its written forms."""
    found = _DATE_TERM.match(term)
    forms = date_forms(date.fromisoformat(found[1])) if found else [normalize(term)]
    # a number must not run on ("march 1" is not "march 13")
    alternatives = "|".join(re.escape(f) + (r"(?![0-9])" if f[-1].isdigit() else "") for f in forms)
    return re.compile(rf"(?<![a-z0-9])(?:{alternatives})")


def mentions(text: str, term: str | list[str]) -> bool:
    normalized = normalize(text)
    return any(_pattern(t).search(normalized) for t in _alternatives(term))


def mentions_all(text: str, terms: Sequence[str | list[str]]) -> bool:
    return all(mentions(text, term) for term in terms)


def mentions_any(text: str, terms: Sequence[str | list[str]]) -> bool:
    return any(mentions(text, term) for term in terms)


# Loading.


def load_case(path: Path) -> Case:
    """One case file, parsed and checked; CaseError names the file and the fault."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise CaseError(f"{path.name}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise CaseError(f"{path.name}: a case is a YAML mapping")
    try:
        case = Case.model_validate(raw)
    except ValidationError as exc:
        raise CaseError(f"{path.name}: {exc}") from None
    if case.id != path.stem:
        raise CaseError(f"{path.name}: id {case.id!r} must be the file's name without .yaml")
    return case


def case_files(directory: Path = CASES_DIR) -> list[Path]:
    """Every case file, in name order."""
    return sorted(directory.glob("*.yaml"))


def load_cases(directory: Path = CASES_DIR, pattern: str = "*", split: str = "all") -> list[Case]:
    """The cases whose file name matches `pattern` (a glob, or several separated by
    commas) and in `split` (or all)."""
    globs = [glob.strip() for glob in pattern.split(",") if glob.strip()]
    chosen = []
    for path in case_files(directory):
        names = (path.name, path.stem)
        if not any(fnmatch.fnmatch(name, glob) for glob in globs for name in names):
            continue
        case = load_case(path)
        if split in ("all", case.split):
            chosen.append(case)
    return chosen
