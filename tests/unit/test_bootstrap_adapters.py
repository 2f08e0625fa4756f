"""Settings choose the adapters; Vertex AI needs a project."""

from __future__ import annotations

import pytest

from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.adapters.embedding.vertex import VertexEmbedder
from jennah.adapters.models.rules import RulesModel
from jennah.adapters.models.vertex import VertexModel
from jennah.bootstrap import build_embedder, build_model
from jennah.errors import Internal
from jennah.settings import Settings


def test_defaults_are_offline() -> None:
    assert isinstance(build_model(Settings()), RulesModel)
    assert isinstance(build_embedder(Settings(embedder="hashing")), HashingEmbedder)


def test_vertex_adapters_are_built_lazily_from_settings() -> None:
    settings = Settings(
        embedder="vertex",
        formation_model="vertex",
        vertex_project="acme-prod",
        vertex_base_url="http://127.0.0.1:1",
    )
    assert isinstance(build_embedder(settings), VertexEmbedder)  # no call made yet
    assert isinstance(build_model(settings), VertexModel)


@pytest.mark.parametrize(
    ("settings", "what"),
    [
        (Settings(embedder="vertex"), "JENNAH_EMBEDDER=vertex"),
        (Settings(formation_model="vertex"), "JENNAH_FORMATION_MODEL=vertex"),
    ],
)
def test_vertex_without_a_project_is_a_clear_misconfiguration(
    settings: Settings, what: str
) -> None:
    build = build_embedder if settings.embedder == "vertex" else build_model
    with pytest.raises(Internal, match=f"{what} needs JENNAH_VERTEX_PROJECT"):
        build(settings)  # type: ignore[operator]
