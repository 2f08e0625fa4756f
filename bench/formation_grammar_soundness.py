"""The grammar check's soundness against llama.cpp's own grammar, on real answers.

Along each answer (a JSON file {"raw": [Priya's extraction text, the revision's]}, e.g.
written by a run with the check off), at every `--step`-th token: every token of the
vocabulary our matcher allows next is accepted by a clone of llama.cpp's grammar sampler
(one it rejects aborts the process: a non-zero exit is the failure). About 1.5 s a
state.

    .venv/bin/python bench/formation_grammar_soundness.py answers.json --step 10
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jennah.adapters.models import local_extraction
from jennah.adapters.models import local_grammar as grammars
from jennah.adapters.models.local_runner import NORMAL, schema_to_gbnf
from jennah.adapters.models.local_weights import QWEN_CODER_1_5B, ensure_gguf
from jennah.settings import Settings

TURNS = (4, 2)  # the Priya conversation's turns, the revision's


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("answers")
    parser.add_argument("--step", type=int, default=10)
    args = parser.parse_args()
    from cyllama.llama import llama_cpp as llama

    llama.disable_logging()
    params = llama.LlamaModelParams()
    params.n_gpu_layers = 0
    path = ensure_gguf(Settings().model_cache_dir, QWEN_CODER_1_5B)
    model = llama.LlamaModel(str(path), params)  # kept: the vocabulary lives in it
    vocab = model.get_vocab()
    pieces = [
        vocab.token_to_piece(t, 0, True)
        if vocab.get_attr(t) == NORMAL and not vocab.is_eog(t)
        else None
        for t in range(vocab.n_vocab)
    ]
    states = allowed = 0
    for text, turns in zip(json.loads(Path(args.answers).read_text())["raw"], TURNS, strict=False):
        gbnf = schema_to_gbnf(local_extraction.schema(turns))
        sampler = llama.LlamaSampler(llama.LlamaSamplerChainParams())
        sampler.add_grammar(vocab, gbnf, "root")
        matcher = grammars.Matcher(grammars.parse(gbnf))
        check = grammars.Check(matcher, matcher.start)
        tokens = list(vocab.tokenize(text, add_special=False, parse_special=False))
        for i, token in enumerate([*tokens, None]):
            if i % args.step == 0 or token is None:
                states += 1
                for t, piece in enumerate(pieces):
                    if piece is not None and check.allows(piece):
                        sampler.clone().accept(t)  # aborts if llama.cpp rejects it
                        allowed += 1
            if token is None:
                break
            sampler.accept(token)
            check = check.after(pieces[token])
        print(f"answer of {len(tokens)} tokens: every allowed token accepted", flush=True)
    print(f"sound: {states} states, {allowed} allowed tokens, all accepted by llama.cpp")


if __name__ == "__main__":
    main()
