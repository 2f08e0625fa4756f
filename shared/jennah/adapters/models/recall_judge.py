"""Keyed-memory recall's optional judge over the language-model port (any adapter:
`rules`, `scripted`, `vertex`, `local`): one bounded call that reads the request and the
lexical shortlist and answers the keys of the useful entries, most useful first.

Off by default (Settings.keyed_recall_judge); `jennah.bootstrap` builds it when on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from jennah.domain.keyed import KeyedMemory
from jennah.errors import Internal
from jennah.ports.model import LanguageModel

# What the model sees of each entry (its key, and its content cut here).
ENTRY_CHARS = 600
MAX_OUTPUT_TOKENS = 512
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"useful": {"type": "array", "items": {"type": "string"}}},
    "required": ["useful"],
}
PROMPT = (
    "You choose which saved memories help answer the current request. Keep only entries "
    "that are useful for it, most useful first; leave out the irrelevant ones. Answer "
    'JSON {{"useful": [keys]}} using only keys listed below.\n\n'
    "Request:\n{request}\n\nMemories (key: content):\n{entries}\n"
)


class ModelRecallJudge:
    """RecallJudge over a LanguageModel; the call is bounded by `deadline_seconds`."""

    def __init__(self, model: LanguageModel, deadline_seconds: float) -> None:
        self._model = model
        self._deadline = deadline_seconds

    def judge(self, request: str, shortlist: Sequence[KeyedMemory]) -> list[str]:
        entries = "\n".join(
            f"- {entry.key}: {json.dumps(entry.content[:ENTRY_CHARS], ensure_ascii=False)}"
            for entry in shortlist
        )
        prompt = PROMPT.format(request=request, entries=entries)
        result = self._model.generate(prompt, SCHEMA, MAX_OUTPUT_TOKENS, self._deadline)
        try:
            useful = json.loads(result.text)["useful"]
        except (ValueError, KeyError, TypeError) as exc:
            raise Internal(f"the recall judge answered no useful list: {exc}") from exc
        if not isinstance(useful, list):
            raise Internal("the recall judge's useful field is not a list")
        return [key for key in useful if isinstance(key, str)]
