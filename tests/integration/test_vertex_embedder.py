"""The Vertex embedder, end to end: the real google-genai client against the stand-in."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import pytest
from google.oauth2.credentials import Credentials

from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.adapters.embedding.vertex import VertexEmbedder
from jennah.errors import DeadlineExceeded, Internal, ResourceExhausted, Unavailable
from tests.support.vertex_standin import LOCATION, PROJECT, VertexStandIn


@pytest.fixture(scope="module")
def standin() -> Iterator[VertexStandIn]:
    with VertexStandIn() as server:
        yield server


def _embedder(standin: VertexStandIn, **options: int | float) -> VertexEmbedder:
    standin.reset()
    return VertexEmbedder(
        project=PROJECT,
        location=LOCATION,
        base_url=standin.base_url,
        credentials=Credentials(token="standin-token"),  # type: ignore[no-untyped-call]
        trust_env=False,
        **options,  # type: ignore[arg-type]
    )


def _norm(vector: list[float]) -> float:
    return math.sqrt(sum(v * v for v in vector))


def test_vectors_are_384_d_unit_length_and_deterministic(standin: VertexStandIn) -> None:
    embedder = _embedder(standin)
    vector = embedder.embed("The user lives in Tokyo.")
    assert len(vector) == embedder.dimensions == 384
    assert _norm(vector) == pytest.approx(1.0)
    assert vector == embedder.embed("The user lives in Tokyo.")
    assert vector == pytest.approx(HashingEmbedder(384).embed("The user lives in Tokyo."))


def test_the_request_asks_text_embedding_005_for_384_dimensions(standin: VertexStandIn) -> None:
    embedder = _embedder(standin)
    embedder.embed_batch(["a", "b"])
    [request] = standin.requests
    assert request.path == (
        f"/v1beta1/projects/{PROJECT}/locations/{LOCATION}/publishers/google/models/"
        "text-embedding-005:predict"
    )
    assert request.body["parameters"]["outputDimensionality"] == 384
    assert [i["content"] for i in request.body["instances"]] == ["a", "b"]


def test_truncated_vectors_are_scaled_to_unit_length(standin: VertexStandIn) -> None:
    embedder = _embedder(standin)
    standin.embedding_scale = 0.37
    assert _norm(embedder.embed("dark mode")) == pytest.approx(1.0)


def test_batches_split_keep_their_order(standin: VertexStandIn) -> None:
    embedder = _embedder(standin, batch_size=2)
    texts = ["one", "two", "three", "four", "five"]
    vectors = embedder.embed_batch(texts)
    assert len(standin.requests) == 3
    assert vectors == [embedder.embed(t) for t in texts]
    assert embedder.embed_batch([]) == []


def test_other_dimensions_are_asked_for_and_a_model_ignoring_them_is_internal(
    standin: VertexStandIn,
) -> None:
    assert len(_embedder(standin, dimensions=128).embed("x")) == 128
    embedder = _embedder(standin)
    standin.embedding_dimensions = 768
    with pytest.raises(Internal, match="returned a 768-d vector"):
        embedder.embed("x")


def test_errors_and_the_time_bound_are_mapped(standin: VertexStandIn) -> None:
    embedder = _embedder(standin, timeout_seconds=0.5)
    standin.fail_next(429)
    with pytest.raises(ResourceExhausted):
        embedder.embed("x")
    standin.fail_next(500)
    with pytest.raises(Unavailable):
        embedder.embed("x")
    standin.slow_next(5.0)
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded, match=r"the embedding call exceeded its 0\.5 s bound"):
        embedder.embed("x")
    assert time.monotonic() - started < 4.0  # the 0.5 s bound, not the 5 s answer
