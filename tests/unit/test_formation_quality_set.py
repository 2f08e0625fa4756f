"""The formation-quality evaluation set holds to its schema (bench/formation_quality/README.md):
every case file parses and passes the cross-checks, and a broken label is refused."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import formation_quality_cases as cases  # noqa: E402

FILES = cases.case_files()


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_case_file_holds_to_the_schema(path: Path) -> None:
    case = cases.load_case(path)
    assert case.id == path.stem


def test_the_set_is_large_and_every_split_covers_every_kind_of_case() -> None:
    loaded = [cases.load_case(path) for path in FILES]
    assert len(loaded) >= 110
    sizes = {split: sum(c.split == split for c in loaded) for split in cases.SPLITS}
    assert sizes["tune"] == sizes["holdout"] >= 40 and sizes["holdout2"] >= 30
    assert sizes["tune2"] >= 10 and sizes["holdout3"] >= 14 and sizes["tune3"] >= 10
    assert sizes["holdout4"] == 24
    for split in cases.COVERING_SPLITS:
        chosen = [c for c in loaded if c.split == split]
        for tag in cases.COVERAGE_TAGS:
            assert any(tag in c.tags for c in chosen), f"no {split} case is tagged {tag}"
    for tag in cases.COVERAGE_TAGS:
        assert sum(tag in c.tags for c in loaded) >= 3, f"fewer than 3 cases tagged {tag}"
    assert sum(c.empty for c in loaded) >= 3


def test_every_split_is_one_the_schema_accepts_and_the_runner_offers() -> None:
    assert get_args(cases.Case.model_fields["split"].annotation) == cases.SPLITS
    held_out = cases.load_cases(cases.CASES_DIR, "*", "holdout3")
    assert [c.id[:3] for c in held_out] == [str(n) for n in range(131, 145)]
    fourth = cases.load_cases(cases.CASES_DIR, "*", "holdout4")
    assert [c.id[:3] for c in fourth] == [str(n) for n in range(161, 185)]


# A valid case to break one field at a time.
VALID: dict[str, Any] = {
    "id": "900-example",
    "split": "tune",
    "tags": ["revision", "employer"],
    "description": "An example.",
    "observedAt": "2026-09-14T19:00:00Z",
    "priors": [
        {
            "label": "workplace",
            "text": "The user works at St Mary's.",
            "validAt": "2026-03-04T00:00:00Z",
        }
    ],
    "turns": [{"role": "user", "content": "I now work at Leeds General Infirmary."}],
    "facts": [{"terms": ["leeds general"], "decision": "revised", "prior": "workplace"}],
}


@pytest.fixture
def write(tmp_path: Path) -> Iterator[Any]:
    def written(data: dict[str, Any], name: str = "900-example") -> Path:
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        return path

    yield written


def changed(**fields: Any) -> dict[str, Any]:
    return {**VALID, **fields}


def test_the_valid_example_loads(write: Any) -> None:
    case = cases.load_case(write(VALID))
    assert case.facts[0].decision == "revised"
    assert case.wire_turns == [
        {"role": "TURN_ROLE_USER", "content": "I now work at Leeds General Infirmary."}
    ]


BROKEN = {
    "unknown key": (changed(notes="x"), "notes"),
    "unknown tag": (changed(tags=["revison"]), "unknown tags"),
    "unknown role": (changed(turns=[{"role": "system", "content": "x"}]), "role"),
    "too many turns": (changed(turns=[{"role": "user", "content": "x"}] * 9), "turns"),
    "uppercase term": (
        changed(facts=[{"terms": ["Leeds"], "decision": "revised", "prior": "workplace"}]),
        "lowercase",
    ),
    "bad date term": (
        changed(facts=[{"terms": ["date:2026-02-30"], "decision": "new"}]),
        "date",
    ),
    "prior that does not exist": (
        changed(facts=[{"terms": ["leeds"], "decision": "revised", "prior": "home"}]),
        "no prior is labelled 'home'",
    ),
    "revised without a prior": (
        changed(facts=[{"terms": ["leeds"], "decision": "revised"}]),
        "names the prior",
    ),
    "new fact a prior already states": (
        changed(facts=[{"terms": ["st mary"], "decision": "new"}]),
        "a prior already states",
    ),
    "known fact its prior lacks": (
        changed(facts=[{"terms": ["leeds"], "decision": "known", "prior": "workplace"}]),
        "lacks its terms",
    ),
    "revision of a newer prior": (
        changed(observedAt="2025-01-01T00:00:00Z"),
        "not older than observedAt",
    ),
    "chronology rejection of an older prior": (
        changed(facts=[{"terms": ["leeds"], "decision": "rejected", "prior": "workplace"}]),
        "newer prior",
    ),
    "assistant fact without an assistant turn": (
        changed(facts=[{"terms": ["leeds"], "decision": "new", "speaker": "assistant"}]),
        "no assistant turn",
    ),
    "empty case expecting a write": (changed(empty=True), "empty: true"),
    "nothing expected, not marked empty": (changed(facts=[]), "mark the case empty"),
    "forbidden term that is expected": (changed(forbidden=["leeds general"]), "forbidden term"),
    "table without a structure expectation": (
        changed(turns=[{"role": "user", "content": "| a | b |\n|---|---|\n| 1 | 2 |"}]),
        "structure expectation",
    ),
    "structure expected without a structure": (
        changed(structure={"preservesStructure": True}),
        "no turn holds",
    ),
    "summarized turn without a structure": (
        changed(
            turns=[
                {"role": "user", "content": "I now work at Leeds General Infirmary."},
                {"role": "user", "content": "```\nrota\n```"},
            ],
            structure={
                "preservesStructure": False,
                "summarizedStructures": [{"turnIndex": 0, "summarizedCount": 1}],
            },
        ),
        "holds only 0",
    ),
    "observedAt without a time zone": (changed(observedAt="2026-09-14T19:00:00"), "time zone"),
    "two priors with one label": (
        changed(priors=[VALID["priors"][0], {"label": "workplace", "text": "Other."}]),
        "share a label",
    ),
}


@pytest.mark.parametrize("data, message", BROKEN.values(), ids=BROKEN.keys())
def test_a_broken_case_is_refused_naming_the_fault(
    write: Any, data: dict[str, Any], message: str
) -> None:
    with pytest.raises(cases.CaseError, match=r"900-example\.yaml") as refused:
        cases.load_case(write(data))
    assert message in str(refused.value)


def test_the_id_must_be_the_file_name(write: Any) -> None:
    with pytest.raises(cases.CaseError, match="must be the file's name"):
        cases.load_case(write(VALID, name="901-other"))


def test_a_file_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "900-example.yaml"
    path.write_text("- just\n- a list\n", encoding="utf-8")
    with pytest.raises(cases.CaseError, match="mapping"):
        cases.load_case(path)


@pytest.mark.parametrize(
    "text, term, found",
    [
        ("The user is allergic to penicillin.", "allerg", True),
        ("The user is metallergic.", "allerg", False),
        ("The user works at St. Mary\u2019s Hospital.", "st mary", True),
        ("The user works at St Mary\u2019s Hospital.", "st marys", True),
        ("Django 5.0 on Postgres.", "5.0", True),
        ("The user works_at Ocado", "works at", True),
        ("Dentist on Tuesday 14 October 2025 at 9:30.", "date:2025-10-14", True),
        ("Dentist on October 14th.", "date:2025-10-14", True),
        ("Dentist on 2025-10-14.", "date:2025-10-14", True),
        ("Dentist on 1 October.", "date:2025-10-14", False),
        ("Dentist on 14 October.", "date:2025-10-01", False),
        ("Locker 1120.", "112", False),
        ("Ask before booking.", ["ask", "check"], True),
        ("Confirm before booking.", ["ask", "check"], False),
    ],
)
def test_terms_match_at_word_starts_in_any_date_spelling(
    text: str, term: str | list[str], found: bool
) -> None:
    assert cases.mentions(text, term) is found


def test_cases_are_chosen_by_one_glob_or_several_separated_by_commas() -> None:
    one = cases.load_cases(cases.CASES_DIR, "001-*")
    assert [c.id for c in one] == ["001-priya-intro"]
    several = cases.load_cases(cases.CASES_DIR, "001-*, 004*,117-daughter-peanut-party")
    assert [c.id[:3] for c in several] == ["001", "004", "117"]
    assert [c.id for c in cases.load_cases(cases.CASES_DIR, "001*,117*", "tune2")] == [
        "117-daughter-peanut-party"
    ]
