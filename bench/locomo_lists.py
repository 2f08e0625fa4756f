"""Collect, once, the ranked lists memory:query's parts return for every LoCoMo
question (semantic, word, typo-tolerant word; 50 each, with their scores), so
merges and expansions can be compared offline in seconds (bench/locomo_tune.py).

    .venv/bin/python bench/locomo_lists.py --out /tmp/locomo-lists.pickle
"""

from __future__ import annotations

import argparse
import pickle
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import open_sqlite_store
from jennah.domain import retrieval
from jennah.domain.models import ScopeRef
from jennah.services.commit import commit
from jennah.services.query import typo_words
from locomo import DEFAULT_DATA, TimedEmbedder, _commands, _make_embedder, load

DEPTH = 50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    conversations = load(args.data)
    embedder = TimedEmbedder(_make_embedder("minilm", 2))
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="jennah-locomo-") as tmp:
        store = open_sqlite_store(Path(tmp))
        for conv in conversations:
            scope = ScopeRef(enterprise_id="locomo", scope_id=conv.sample_id)
            for command in _commands(scope, conv.turns):
                commit(command, store, embedder, lambda: datetime.now(UTC))
            records = store.list_chunks(scope, None, 100_000, 0)
            chunks = {
                r.id: (r.metadata["dia_id"], int(r.metadata["session"]), r.text, r.embedding)
                for r in records
            }
            questions = []
            as_of = datetime.now(UTC)
            for q in conv.questions:
                words = retrieval.query_words(q.text)
                vector = embedder.embed(q.text)
                sem = store.search_chunks(scope, vector, DEPTH, [], as_of)
                exact = store.search_words(scope, words, DEPTH, [], as_of) if words else []
                texts = [h.record.text for h in exact[:10]]
                unmatched = retrieval.fuzzy_words(retrieval.unmatched_words(words, texts))
                typos = typo_words(store, scope, unmatched, [], as_of)
                typo = (
                    store.search_words(scope, typos, DEPTH, [], as_of, fuzzy=True) if typos else []
                )
                questions.append(
                    {
                        "text": q.text,
                        "category": q.category,
                        "evidence": q.evidence,
                        "words": words,
                        "vector": vector,
                        "sem": [(h.record.id, h.score) for h in sem],
                        "exact": [(h.record.id, h.score) for h in exact],
                        "unmatched": unmatched,
                        "typo": [(h.record.id, h.score) for h in typo],
                    }
                )
            out.append({"id": conv.sample_id, "chunks": chunks, "questions": questions})
            print(conv.sample_id, len(chunks), len(questions), flush=True)
    args.out.write_bytes(pickle.dumps(out))


if __name__ == "__main__":
    main()
