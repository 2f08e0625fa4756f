"""memory:form's domain: turns, their rendering, candidates, decisions and the receipt.

Pure rules, no I/O. The formation service (`jennah.services.formation`) runs the
pipeline; this module holds what can be decided without a store or a model.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from jennah.domain.models import MemoryType

MAX_TURNS = 200
MAX_CANDIDATES = 64
MAX_FORMATION_KEY_LENGTH = 256
PLATFORM_PREFIX = "jennah."
SOURCE_STEP = "jennah.source_step"
SOURCE_TURNS = "jennah.source_turns"
TURN_OFFSETS = "jennah.turn_offsets"

# Formation units: max(1, ceil(input / 16,384), ceil(output / 8,192)).
INPUT_TOKENS_PER_UNIT = 16_384
OUTPUT_TOKENS_PER_UNIT = 8_192


class TurnRole(StrEnum):
    USER = "TURN_ROLE_USER"
    ASSISTANT = "TURN_ROLE_ASSISTANT"
    TOOL_CALL = "TURN_ROLE_TOOL_CALL"
    TOOL_RESULT = "TURN_ROLE_TOOL_RESULT"


ROLE_LABELS: dict[TurnRole, str] = {
    TurnRole.USER: "user",
    TurnRole.ASSISTANT: "assistant",
    TurnRole.TOOL_CALL: "tool call",
    TurnRole.TOOL_RESULT: "tool result",
}


class Turn(BaseModel):
    """One turn; its content may be blank (an assistant turn that only called a tool)."""

    role: TurnRole
    content: str


def is_blank(turn: Turn) -> bool:
    """A turn with no content but whitespace: it renders, and it can never be cited."""
    return not turn.content.strip()


class CandidateKind(StrEnum):
    FACT = "CANDIDATE_KIND_FACT"
    RELATIONSHIP = "CANDIDATE_KIND_RELATIONSHIP"


class Decision(StrEnum):
    NEW = "MEMORY_DECISION_NEW"
    REVISED = "MEMORY_DECISION_REVISED"
    KNOWN = "MEMORY_DECISION_KNOWN"
    REJECTED = "MEMORY_DECISION_REJECTED"


class RenderedConversation(BaseModel):
    """The execution-log text of a formation and where each turn begins in it."""

    tool_input: str
    offsets: list[int]  # UTF-8 byte offset of each rendered turn in tool_input
    # Derived from the turns alone, not the clock: forming the same conversation
    # again (even without observedAt) names the step the first formation recorded.
    step_id: str

    def turn_text(self, index: int) -> str:
        """Turn `index` sliced by byte offsets (never by parsing headers)."""
        data = self.tool_input.encode("utf-8")
        end = self.offsets[index + 1] if index + 1 < len(self.offsets) else len(data)
        return data[self.offsets[index] : end].decode("utf-8")


def render(turns: list[Turn], clock: datetime) -> RenderedConversation:
    """Number every turn and stamp the clock, so relative dates can become absolute.

    The header states when the conversation took place (observedAt, or the
    receipt time); each turn starts with `[turn N] role:` on its own line, followed
    by its content as sent (a blank turn: its header and an empty line, so every
    turn keeps its number and its offset).
    """
    header = f"Conversation observed at {clock.isoformat()} ({clock.strftime('%A')})\n"
    parts = [header]
    offsets: list[int] = []
    size = len(header.encode("utf-8"))
    for index, turn in enumerate(turns):
        text = f"[turn {index}] {ROLE_LABELS[turn.role]}:\n{turn.content}\n"
        offsets.append(size)
        size += len(text.encode("utf-8"))
        parts.append(text)
    step_id = "frm_" + fingerprint(turns, None)[:32]
    return RenderedConversation(tool_input="".join(parts), offsets=offsets, step_id=step_id)


def fingerprint(turns: list[Turn], observed_at: datetime | None) -> str:
    """The request fingerprint a formationKey is bound to: turns and observedAt."""
    payload = {
        "turns": [[t.role.value, t.content] for t in turns],
        "observedAt": observed_at.isoformat() if observed_at else None,
    }
    encoded = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(encoded).hexdigest()


def formation_units(input_tokens: int, output_tokens: int) -> int:
    return max(
        1,
        math.ceil(input_tokens / INPUT_TOKENS_PER_UNIT),
        math.ceil(output_tokens / OUTPUT_TOKENS_PER_UNIT),
    )


# Quotes: what extraction quotes is compared with the turns it cites, as a reader would.

# Curly, low and prime quotation marks, each read as its straight counterpart.
_QUOTE_MARKS = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
    }
)  # fmt: skip


def comparable(text: str) -> str:
    """`text` as a quote is compared: NFC, case folded, curly quotation marks read as
    straight ones, and every run of whitespace (line breaks included) one space."""
    folded = unicodedata.normalize("NFC", text).casefold().translate(_QUOTE_MARKS)
    return " ".join(folded.split())


def quoted_in(quote: str, texts: Iterable[str]) -> bool:
    """True when the non-blank `quote` appears in one of `texts`, or across them read
    one after the other, differing only by case, quotation marks or spacing."""
    wanted = comparable(quote)
    if not wanted:
        return False
    compared = [comparable(text) for text in texts]
    return any(wanted in text for text in compared) or wanted in " ".join(compared)


# Structure: markdown pipe tables and fenced code blocks, as GitHub-flavoured markdown
# reads them.

# A fence opens a code block: three or more backticks or tildes, indented at most three
# spaces, then an info string (which, after backticks, holds no backtick).
_FENCE_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>[^\r]*)\r?$")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")
_ALIGNMENT_CELL = re.compile(r"^[ \t]*:?-+:?[ \t]*$")  # ---, :--, --:, :-:


class StructureKind(StrEnum):
    TABLE = "table"
    CODE = "code block"


class Structure(BaseModel):
    kind: StructureKind
    text: str


def detect_structures(content: str) -> list[Structure]:
    """Fenced code blocks and pipe tables, in the order they appear.

    A code block is fenced with ``` or ~~~ (three or more), and closed only by a
    fence of the same character at least as long (a ``` inside a ```` block does
    not close it), or by the end of the turn. A table is a header row and an
    alignment row with as many cells (`---`, `:--`, `--:`, `:-:`), outer pipes
    optional, then every following row holding a pipe. Nothing inside a code
    block is a table.
    """
    lines = content.split("\n")
    found: list[Structure] = []
    start = 0
    while start < len(lines):
        kind, end = StructureKind.CODE, _code_block_end(lines, start)
        if end is None:
            kind, end = StructureKind.TABLE, _table_end(lines, start)
        if end is None:
            start += 1
            continue
        found.append(Structure(kind=kind, text="\n".join(lines[start:end])))
        start = end
    return found


def _code_block_end(lines: list[str], start: int) -> int | None:
    """The line after the code block whose fence opens at `start`; None when none does."""
    opened = _FENCE_OPEN.match(lines[start])
    if opened is None:
        return None
    fence = opened["fence"]
    if fence[0] == "`" and "`" in opened["info"]:
        return None  # inline code, not a fence
    closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*\r?$")
    for index in range(start + 1, len(lines)):
        if closing.match(lines[index]):
            return index + 1
    return len(lines)


def _table_end(lines: list[str], start: int) -> int | None:
    """The line after the table whose header row is `start`; None when no table starts."""
    if start + 1 >= len(lines):
        return None
    header, alignment = _cells(lines[start]), _cells(lines[start + 1])
    if header is None or alignment is None or len(header) != len(alignment):
        return None
    if not all(_ALIGNMENT_CELL.match(cell) for cell in alignment):
        return None
    end = start + 2
    while end < len(lines) and _cells(lines[end]) is not None:
        end += 1
    return end


def _cells(line: str) -> list[str] | None:
    """A table row's cells (outer pipes optional); None for a line with no unescaped pipe."""
    row = line.strip()
    if not _UNESCAPED_PIPE.search(row):
        return None
    row = row.removeprefix("|")
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return _UNESCAPED_PIPE.split(row)


def preserves_structure(text: str, structures: list[Structure]) -> bool:
    """True only when the fact keeps one recognized structure of its turns verbatim."""
    return any(s.text.strip() and s.text.strip() in text for s in structures)


class SummarizedStructures(BaseModel):
    turn_index: int
    description: str  # e.g. "1 table", "2 code blocks", "1 table, 1 code block"
    summarized_count: int


def describe(structures: list[Structure]) -> str:
    parts = []
    for kind in StructureKind:
        n = sum(1 for s in structures if s.kind is kind)
        if n:
            parts.append(f"{n} {kind.value}{'' if n == 1 else 's'}")
    return ", ".join(parts)


# Candidates.


class EntityRef(BaseModel):
    name: str
    entity_class: str | None = None


class ExtractedCandidate(BaseModel):
    """One candidate as extraction proposed it (before verification in code)."""

    kind: CandidateKind
    text: str
    memory_type: str = "fact"
    turns: list[int] = Field(default_factory=list)
    quote: str = ""
    attributes: dict[str, str] = Field(default_factory=dict)
    # Claim fields a model MAY propose (each optional: code decides what is left out, and
    # checks what is given; see jennah.services.formation.claims). The local model
    # proposes none of them: every generated token costs it time.
    summary: str = ""
    when_to_use: str = ""
    durability: str = ""  # durable | seasonal | passing
    valid_until: datetime | None = None  # an absolute instant, never a phrase
    strength: str = ""  # hard | soft
    confidence: float | None = None  # 0..1, the extractor's own
    # relationships only
    subject: EntityRef | None = None
    relation: str | None = None
    object: EntityRef | None = None


# What a model may call a fact's memory type, read as the allowed type it means. A fact
# is never a relationship (relationships are their own kind of candidate).
_MEMORY_TYPE_SYNONYMS: dict[str, MemoryType] = {
    "profile": MemoryType.IDENTITY,
    "biography": MemoryType.IDENTITY,
    "instruction": MemoryType.DIRECTIVE,
    "rule": MemoryType.DIRECTIVE,
    "command": MemoryType.DIRECTIVE,
    "guideline": MemoryType.DIRECTIVE,
    "policy": MemoryType.DIRECTIVE,
    "request": MemoryType.DIRECTIVE,
    "like": MemoryType.PREFERENCE,
    "dislike": MemoryType.PREFERENCE,
    "favorite": MemoryType.PREFERENCE,
    "favourite": MemoryType.PREFERENCE,
    "taste": MemoryType.PREFERENCE,
    "restriction": MemoryType.CONSTRAINT,
    "limitation": MemoryType.CONSTRAINT,
    "limit": MemoryType.CONSTRAINT,
    "requirement": MemoryType.CONSTRAINT,
    "relationship": MemoryType.FACT,
}
_FACT_TYPES = {t.value: t for t in MemoryType if t is not MemoryType.RELATIONSHIP}


def fact_memory_type(named: str) -> MemoryType:
    """The allowed memory type nearest to what extraction named a fact's: a type's own
    name in any case or number ("Preferences"), else a synonym ("instruction" and
    "rule" are directives), else `fact`. Never a relationship, never refused."""
    words = [_singular(word) for word in re.findall(r"[a-z]+", named.casefold())]
    for word in words:
        if word in _FACT_TYPES:
            return _FACT_TYPES[word]
    for word in words:
        if word in _MEMORY_TYPE_SYNONYMS:
            return _MEMORY_TYPE_SYNONYMS[word]
    return MemoryType.FACT


def _singular(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


class CandidateOutcome(BaseModel):
    """One row of the receipt's `candidates`."""

    candidate_id: str
    kind: CandidateKind
    text: str
    decision: Decision
    matched_id: str | None = None
    rejection_reason: str | None = None
    preserves_structure: bool = False


class FormationReceipt(BaseModel):
    commit_timestamp: datetime | None = None
    candidates: list[CandidateOutcome] = Field(default_factory=list)
    chunk_supersessions: int = 0
    edge_supersessions: int = 0
    summarized_structures: list[SummarizedStructures] = Field(default_factory=list)
    candidates_dropped: int = 0
    candidate_cap: int = MAX_CANDIDATES
    execution_log_rows: int = 0
    formation_units: int = 1
    input_tokens: int = 0
    output_tokens: int = 0
    replay: bool = False
    formation_key: str | None = None
