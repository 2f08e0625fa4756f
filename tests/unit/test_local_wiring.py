"""The local model's weights (reassembled once, verified) and its wiring: Settings,
the container's time bound, and `jnh serve`'s choice of formation model."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from jennah.adapters.models import local_weights
from jennah.adapters.models.local import LocalModel
from jennah.adapters.models.local_runner import LlamaRunner
from jennah.adapters.models.local_weights import Weights, ensure_gguf
from jennah.bootstrap import build_model, model_call_deadline
from jennah.cli.serve import formation_model
from jennah.errors import FailedPrecondition
from jennah.settings import Settings

PARTS = [b"GGUF-part-one|", b"part-two|", b"part-three"]


class FakeWeights(Weights):
    """Three small parts held in memory; counts the reads."""

    reads: list[int]

    def part(self, n: int) -> bytes:
        self.reads.append(n)
        return PARTS[n - 1]


def fake_weights(sha256: str | None = None) -> FakeWeights:
    whole = b"".join(PARTS)
    weights = FakeWeights(
        name="tiny",
        package_prefix="tiny_part",
        parts=3,
        size=len(whole),
        sha256=sha256 or hashlib.sha256(whole).hexdigest(),
    )
    object.__setattr__(weights, "reads", [])
    return weights


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_weights, "missing", lambda weights=None: None)


@pytest.mark.usefixtures("installed")
def test_the_parts_are_reassembled_once_and_verified(tmp_path: Path) -> None:
    weights = fake_weights()
    path = ensure_gguf(tmp_path / "cache", weights)
    assert path == tmp_path / "cache" / "tiny.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    assert weights.reads == [1, 2, 3]
    assert ensure_gguf(tmp_path / "cache", weights) == path
    assert weights.reads == [1, 2, 3]  # verified before: not read again
    assert sorted(p.name for p in path.parent.iterdir()) == ["tiny.gguf", "tiny.gguf.verified"]


@pytest.mark.usefixtures("installed")
def test_a_changed_file_is_reassembled(tmp_path: Path) -> None:
    weights = fake_weights()
    path = ensure_gguf(tmp_path, weights)
    path.write_bytes(b"truncated")
    assert ensure_gguf(tmp_path, weights).read_bytes() == b"".join(PARTS)
    assert weights.reads == [1, 2, 3, 1, 2, 3]


@pytest.mark.usefixtures("installed")
def test_parts_that_do_not_match_the_recorded_sha256_leave_no_file(tmp_path: Path) -> None:
    with pytest.raises(FailedPrecondition) as raised:
        ensure_gguf(tmp_path, fake_weights(sha256="0" * 64))
    assert raised.value.reason == "LOCAL_MODEL_CORRUPT"
    assert "SHA-256" in raised.value.message
    assert list(tmp_path.iterdir()) == []


def test_missing_packages_are_named(tmp_path: Path) -> None:
    weights = Weights("nowhere", "jennah_no_such_part", 2, 10, "0" * 64)
    assert local_weights.missing(weights) in (
        "the llama.cpp binding 'cyllama' is not installed",
        "2 of the 2 weight packages (jennah-no-such-partN) are not installed",
    )
    with pytest.raises(FailedPrecondition) as raised:
        ensure_gguf(tmp_path, weights)
    assert raised.value.reason == "LOCAL_MODEL_NOT_INSTALLED"
    assert "scripts/bootstrap" in raised.value.message


# Wiring.


def test_local_is_a_formation_model_with_its_own_time_bound(tmp_path: Path) -> None:
    settings = Settings(formation_model="local", model_cache_dir=tmp_path)
    model = build_model(settings)  # nothing loaded yet
    assert isinstance(model, LocalModel)
    assert list(tmp_path.iterdir()) == []
    assert model_call_deadline(settings) == 600.0
    assert model_call_deadline(Settings(formation_model="rules")) == 30.0
    assert model_call_deadline(Settings(local_model_call_timeout_seconds=90)) == 30.0
    local = Settings(formation_model="local", local_model_call_timeout_seconds=90)
    assert model_call_deadline(local) == 90


def test_the_library_default_stays_rules() -> None:
    assert Settings().formation_model == "rules"


@pytest.fixture
def local_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("jennah.bootstrap.local_model_missing", lambda: None)


@pytest.fixture
def local_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "jennah.bootstrap.local_model_missing", lambda: "the llama.cpp binding is not installed"
    )


@pytest.mark.usefixtures("local_installed")
def test_serve_uses_local_unless_the_option_or_the_environment_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("JENNAH_FORMATION_MODEL", raising=False)
    assert formation_model(Settings(), None)[0].formation_model == "local"
    assert formation_model(Settings(), "rules")[0].formation_model == "rules"
    monkeypatch.setenv("JENNAH_FORMATION_MODEL", "rules")
    assert formation_model(Settings(), None) == (Settings(formation_model="rules"), None)
    assert formation_model(Settings(), "local")[0].formation_model == "local"


@pytest.mark.usefixtures("local_missing")
def test_serve_falls_back_to_rules_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JENNAH_FORMATION_MODEL", raising=False)
    for requested in (None, "local"):
        settings, fallback = formation_model(Settings(), requested)
        assert settings.formation_model == "rules"
        assert fallback == (
            "the local formation model cannot run: the llama.cpp binding is not installed; "
            "formations use the rules model (run scripts/bootstrap to install the local model)"
        )
    assert formation_model(Settings(), "vertex") == (Settings(formation_model="vertex"), None)


def test_speculative_decoding_is_asked_for_by_settings_and_uses_the_draft_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Weights] = []

    def fake_ensure(cache_dir: Path, weights: Weights = local_weights.QWEN_CODER_1_5B) -> Path:
        made.append(weights)
        return cache_dir / weights.file_name

    monkeypatch.setattr("jennah.adapters.models.local.ensure_gguf", fake_ensure)
    settings = Settings(
        formation_model="local",
        model_cache_dir=tmp_path,
        local_model_draft=True,
        local_model_draft_tokens=5,
    )
    model = build_model(settings)
    assert isinstance(model, LocalModel)
    runner = model._loaded_runner()  # paths only: nothing is loaded
    assert made == [local_weights.QWEN_CODER_1_5B, local_weights.QWEN_CODER_0_5B]
    assert isinstance(runner, LlamaRunner) and runner.draft is not None
    assert runner.draft.model_path == tmp_path / local_weights.QWEN_CODER_0_5B.file_name
    assert runner.draft_tokens == 5
    plain = build_model(Settings(formation_model="local", model_cache_dir=tmp_path))
    assert isinstance(plain, LocalModel)
    plain_runner = plain._loaded_runner()
    assert isinstance(plain_runner, LlamaRunner) and plain_runner.draft is None


def test_without_the_draft_weights_the_answers_come_without_speculation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fake_ensure(cache_dir: Path, weights: Weights = local_weights.QWEN_CODER_1_5B) -> Path:
        if weights is local_weights.QWEN_CODER_0_5B:
            raise FailedPrecondition("absent", reason="LOCAL_MODEL_NOT_INSTALLED")
        return cache_dir / weights.file_name

    monkeypatch.setattr("jennah.adapters.models.local.ensure_gguf", fake_ensure)
    runner = LocalModel(tmp_path, draft_tokens=3)._loaded_runner()
    assert isinstance(runner, LlamaRunner) and runner.draft is None


def test_the_grammar_check_is_on_by_default_and_settings_turn_it_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fake_ensure(cache_dir: Path, weights: Weights = local_weights.QWEN_CODER_1_5B) -> Path:
        return cache_dir / weights.file_name

    monkeypatch.setattr("jennah.adapters.models.local.ensure_gguf", fake_ensure)
    for setting, checked in ((None, True), (False, False)):
        options = {} if setting is None else {"local_model_grammar_check": setting}
        model = build_model(Settings(formation_model="local", model_cache_dir=tmp_path, **options))
        assert isinstance(model, LocalModel)
        runner = model._loaded_runner()
        assert isinstance(runner, LlamaRunner) and runner.grammar_check is checked
