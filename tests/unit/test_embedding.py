"""The hashing embedder honours the Embedder contract."""

from __future__ import annotations

import math

import pytest

from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.adapters.embedding.minilm import MiniLMEmbedder, _runs
from jennah.ports.embedder import Embedder


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


def test_satisfies_the_port() -> None:
    port: Embedder = HashingEmbedder()
    assert port.dimensions == 384
    assert port.model_name


def test_vectors_have_384_dimensions_and_unit_length(embedder: HashingEmbedder) -> None:
    vector = embedder.embed("Caroline went to the LGBTQ support group yesterday.")
    assert len(vector) == 384
    assert _norm(vector) == pytest.approx(1.0, abs=1e-9)


def test_is_deterministic_across_instances(embedder: HashingEmbedder) -> None:
    text = "Melanie painted a sunrise over the lake."
    assert embedder.embed(text) == HashingEmbedder().embed(text)


def test_is_case_insensitive_on_words(embedder: HashingEmbedder) -> None:
    assert embedder.embed("Hello World") == embedder.embed("hello, world!")


def test_related_texts_are_closer_than_unrelated(embedder: HashingEmbedder) -> None:
    anchor = embedder.embed("the cat sat on the mat")
    related = embedder.embed("a cat sat on a mat")
    unrelated = embedder.embed("quarterly revenue grew in europe")
    assert _cosine(anchor, related) > _cosine(anchor, unrelated) + 0.3


@pytest.mark.parametrize("text", ["", "   ", "?!.,"])
def test_text_without_words_gets_a_fixed_unit_vector(embedder: HashingEmbedder, text: str) -> None:
    vector = embedder.embed(text)
    assert len(vector) == 384
    assert _norm(vector) == pytest.approx(1.0)
    assert vector == embedder.embed("")


def test_batch_equals_single_results(embedder: HashingEmbedder) -> None:
    texts = ["one fish", "two fish", "red fish blue fish", ""]
    assert embedder.embed_batch(texts) == [embedder.embed(t) for t in texts]
    assert embedder.embed_batch([]) == []


def test_embed_soon_answers_what_embed_does(embedder: HashingEmbedder) -> None:
    assert embedder.embed_soon("red fish")() == embedder.embed("red fish")


def test_dimensions_are_configurable() -> None:
    vector = HashingEmbedder(dimensions=16).embed("small vector")
    assert len(vector) == 16
    assert _norm(vector) == pytest.approx(1.0)


def test_minilm_construction_is_cheap_and_lazy() -> None:
    embedder = MiniLMEmbedder()
    assert embedder._loaded is None
    assert embedder.dimensions == 384
    assert embedder.model_name == "all-MiniLM-L6-v2"
    assert embedder.embed_batch([]) == []
    assert embedder._loaded is None


def test_minilm_rejects_nonsense_settings() -> None:
    with pytest.raises(ValueError):
        MiniLMEmbedder(threads=0)
    with pytest.raises(ValueError):
        MiniLMEmbedder(max_batch_tokens=0)


def test_minilm_runs_cover_every_text_once_unpadded_within_bounds() -> None:
    lengths = [5, 40, 3, 3, 17, 200, 9, 9, 9, 60, 9, 9]
    token_ids = [[1] * n for n in lengths]
    runs = list(_runs(token_ids, batch_size=3, max_tokens=64))
    assert sorted(i for run in runs for i in run) == list(range(len(lengths)))
    for run in runs:
        assert len({lengths[i] for i in run}) == 1  # one length per run: never padded
        assert len(run) <= 3
        assert len(run) * lengths[run[0]] <= 64 or len(run) == 1  # too long: runs alone
    assert [len(r) for r in runs if lengths[r[0]] == 9] == [3, 2]
    assert [len(r) for r in runs if lengths[r[0]] == 3] == [2]
