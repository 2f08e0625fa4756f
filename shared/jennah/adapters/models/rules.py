"""The `rules` model: deterministic, offline extraction and reconciliation.

The embedded default when no model is configured. It reads the data block of
the formation prompts (`jennah.ports.prompts.read_data`) and answers with
the same JSON a real model would, from a small, fixed set of rules. It is
honest rather than clever: what no rule below covers, it does not extract.

Extraction (task "extract"):
- user turns, first-person statements at the start of a clause, rewritten in
  the third person about "the user":
  "I live in X" / "I moved to X" -> "The user lives in X." / "The user moved
  to X." plus the relationship the user -lives_in-> X; "I work at X" / "I work
  for X" -> "The user works at/for X." plus the user -works_at-> X;
  "I prefer / like / love / hate X" -> a preference; "My X is Y" -> "The
  user's X is Y."; "I am a/an X" / "I'm a/an X" -> an identity.
  A few adverbs between "I" and the verb are dropped ("I now live in ...").
- user turns holding a markdown pipe table or a fenced code block: one fact
  per structure, its lead-in line (the line before it) then the structure
  verbatim ("Shift rotation:\\n\\n| agent | shift |..."); without a lead-in
  line, "The user shared a table:".
- assistant turns: recommendations only ("I recommend X", "I'd suggest X",
  "you should try X", "Try X for Y") -> "The assistant recommended X ...".
- never: questions, offers and conversation mechanics ("Anything else?",
  "Let me know ...", "Happy to help"), objects that are only a pronoun
  ("I love it"), tool calls and tool results, negations and past or
  hypothetical statements ("I don't live in ...", "I used to live in ...",
  "If I worked at ..."), facts stated in the third person, anything implied
  rather than said. Relative dates stay as written (the clock is not used).
- every candidate cites its one turn and a verbatim quote (its clause, or
  the structure), a substring of that turn's content.
- entity classes only from the declared vocabulary and only where a trivial
  rule always holds: the user -> a class named Person or User; where someone
  lives -> Place or Location; where someone works -> Organization. A declared
  relation type of the same meaning (LIVES_IN, RESIDES_IN; WORKS_AT, WORKS_FOR,
  EMPLOYED_BY) is used for the relation's name.

Reconciliation (task "reconcile"): see `rules_reconciliation` (identical
tokens -> known; same subject and single-valued verb, different object ->
revised; else new).

Usage: deterministic estimates, `len(prompt) // 4` tokens in and
`len(answer) // 4` out. The output bound is enforced (ABORTED naming it); the
time bound is not, since the rules answer in microseconds.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from jennah.adapters.models.bounds import estimate_tokens, output_bound_exceeded
from jennah.adapters.models.rules_extraction import extract
from jennah.adapters.models.rules_reconciliation import reconcile
from jennah.errors import Internal
from jennah.ports.model import ModelResult
from jennah.ports.prompts import ExtractionAnswer, ReconcileAnswer, read_data

NAME = "rules"
REGION = "local"


class RulesModel:
    """The LanguageModel port, answered by rules: same prompt in, same answer out."""

    name: str = NAME
    region: str = REGION

    def generate(
        self,
        prompt: str,
        json_schema: dict[str, Any],
        max_output_tokens: int,
        deadline_seconds: float,
    ) -> ModelResult:
        text = answer(_data(prompt)).model_dump_json(exclude_none=True)
        input_tokens, output_tokens = estimate_tokens(prompt), estimate_tokens(text)
        if output_tokens > max_output_tokens:
            raise output_bound_exceeded(
                max_output_tokens, input_tokens=input_tokens, output_tokens=max_output_tokens
            )
        return ModelResult(
            text=text, input_tokens=input_tokens, output_tokens=output_tokens, model=NAME
        )


def answer(data: dict[str, Any]) -> BaseModel:
    """The answer to one formation prompt's data: by its `task` key."""
    task = data.get("task")
    if task == "extract":
        return ExtractionAnswer(candidates=extract(data))
    if task == "reconcile":
        return ReconcileAnswer(decisions=reconcile(data))
    raise Internal(f"the rules model answers the tasks 'extract' and 'reconcile', not {task!r}")


def _data(prompt: str) -> dict[str, Any]:
    try:
        return read_data(prompt)
    except ValueError:  # no data block, or not JSON
        raise Internal(
            "the rules model reads only prompts built by jennah.ports.prompts.build_prompt"
        ) from None
