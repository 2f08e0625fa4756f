"""The layering contracts of pyproject.toml [tool.importlinter] can fail, and can hold.

Each test runs import-linter, in process, with the project's own contracts over a package
written to a temporary folder and put first on sys.path under the name `jennah`: a small
synthetic package laid out as the target layering says (every contract must hold there, so no
test passes vacuously), the same package with one wrong import (exactly the contracts that
forbid it must break), and a copy of today's shared/jennah with two wrong imports added. None
depends on today's tree keeping the contracts: .ci/run's "layering" step checks that.
"""

from __future__ import annotations

import copy
import shutil
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from importlinter import configuration
from importlinter.application import output, rendering, use_cases
from importlinter.application.user_options import UserOptions

from tests.support import layering

ROOT = Path(__file__).resolve().parents[2]

# A package that keeps every contract: each top-level package imports what the target layering
# lets it, and the CLI has exactly the documented local-administration exceptions.
CLEAN_PACKAGE = {
    "__init__.py": "",
    "errors.py": "",
    "domain/__init__.py": "from jennah import errors\n",
    "domain/models.py": "from jennah import errors\n",
    "ports/__init__.py": "from jennah import domain, errors\n",
    "services/__init__.py": "from jennah import domain, errors, ports\n",
    "services/access.py": "from jennah import ports\n",
    "services/enterprises.py": "from jennah import ports\n",
    "services/usage_report.py": "from jennah import ports\n",
    "adapters/__init__.py": "from jennah import domain, errors, ports\n",
    "adapters/store.py": "from jennah import ports\n",
    "settings.py": "from jennah import domain\n",
    "auth.py": "from jennah import errors\n",
    "api/__init__.py": "",
    "api/app.py": "from jennah import domain, errors, ports, services\n",
    "api/dto.py": "",
    "{root}.py": "from jennah import adapters, api, auth, services, settings\n",
    "client/__init__.py": "from jennah import auth, errors, settings\nfrom jennah.api import dto\n",
    "mcp/__init__.py": "from jennah import domain, errors\n",
    "console/__init__.py": "from jennah import errors\nfrom jennah.api import dto\n",
    "cli/__init__.py": "",
    "cli/main.py": (
        "from jennah import auth, client, domain, errors, mcp, settings\n"
        "from jennah.api import dto\n"
        "from jennah.cli import enterprises, serve, usage\n"
    ),
    "cli/serve.py": "from jennah import {root}\nfrom jennah.api import app\n",
    "cli/enterprises.py": (
        "def create():\n    from jennah import {root}\n"
        "    from jennah.services import enterprises\n"
    ),
    "cli/usage.py": "from jennah import {root}\nfrom jennah.services import usage_report\n",
    # The ADK integration: a client of the HTTP API above the CLI, whose credential lookup
    # it shares.
    "cli/options.py": "from jennah import auth, settings\n",
    "adk/__init__.py": "from jennah import errors, settings\nfrom jennah.cli import options\n",
}

# One wrong import, added to one module of the clean package, and every contract it breaks.
WRONG_IMPORTS = {
    "domain imports a port": (
        "domain/models.py",
        "from jennah import ports",
        {"layers", "no-cycles", "domain"},
    ),
    "domain imports an adapter inside a function": (
        "domain/models.py",
        "def f():\n    from jennah.adapters import store",
        {"layers", "no-cycles", "domain", "wiring"},
    ),
    # The adapters reach the services through the ports: broken too.
    "port imports a service": (
        "ports/__init__.py",
        "from jennah import services",
        {"layers", "no-cycles", "ports", "adapters"},
    ),
    "service reads the settings": (
        "services/usage_report.py",
        "from jennah import settings",
        {"layers", "services"},
    ),
    "adapter imports a service": (
        "adapters/store.py",
        "from jennah.services import usage_report",
        {"layers", "adapters"},
    ),
    "adapter reads the settings": (
        "adapters/store.py",
        "from jennah import settings",
        {"layers", "adapters"},
    ),
    "api imports the composition root": (
        "api/app.py",
        "from jennah import {root}",
        {"layers", "no-cycles", "api"},
    ),
    "api imports an adapter": (
        "api/app.py",
        "from jennah.adapters import store",
        {"api", "wiring"},
    ),
    # The CLI, the client and the ADK integration read the settings, and so reach the adapter.
    "settings import an adapter": (
        "settings.py",
        "from jennah import adapters",
        {"wiring", "cli", "client", "adk"},
    ),
    "settings import the api": ("settings.py", "from jennah import api", {"layers", "adk"}),
    "errors import the domain": ("errors.py", "from jennah import domain", {"layers", "no-cycles"}),
    "a new top-level module": ("extra.py", "", {"layers"}),
    # the wire models are allowed (through the client); an API module reaching the
    # services is not
    "mcp imports the api's handlers": (
        "mcp/__init__.py",
        "from jennah.api import app",
        {"mcp", "cli"},
    ),
    # The CLI imports the MCP server (`jnh mcp`), and so reaches what it imports.
    "mcp imports a service": (
        "mcp/__init__.py",
        "from jennah.services import access",
        {"mcp", "cli"},
    ),
    "mcp imports the composition root": (
        "mcp/__init__.py",
        "from jennah import {root}",
        {"mcp", "cli"},
    ),
    # The console serves files: the error body's wire models are allowed, a service is not.
    "console imports a service": (
        "console/__init__.py",
        "from jennah.services import access",
        {"console"},
    ),
    "console imports the composition root": (
        "console/__init__.py",
        "from jennah import {root}",
        {"console"},
    ),
    "mcp imports the cli": (
        "mcp/__init__.py",
        "from jennah.cli import main",
        {"layers", "no-cycles", "mcp"},
    ),
    "cli imports a service": (
        "cli/main.py",
        "from jennah.services import access",
        {"cli"},
    ),
    "cli imports the composition root": ("cli/main.py", "from jennah import {root}", {"cli"}),
    "client imports a service": (
        "client/__init__.py",
        "from jennah.services import access",
        {"client", "cli"},
    ),
    # The API's wire models are the client's; a module that reaches the services is not.
    # (The CLI is built on the client: what the client reaches, the CLI reaches too.)
    "client imports an api module that imports the services": (
        "client/__init__.py",
        "from jennah.api import app",
        {"client", "cli"},
    ),
    "client imports the composition root": (
        "client/__init__.py",
        "from jennah import {root}",
        {"layers", "client", "cli"},
    ),
    "client imports the cli": (
        "client/__init__.py",
        "from jennah import cli",
        {"layers", "client", "no-cycles"},
    ),
    "cli imports an adapter": (
        "cli/main.py",
        "from jennah.adapters import store",
        {"cli", "wiring"},
    ),
    "adk imports a service": ("adk/__init__.py", "from jennah.services import access", {"adk"}),
    "adk imports the api": ("adk/__init__.py", "from jennah.api import app", {"adk"}),
    "adk imports the composition root": ("adk/__init__.py", "from jennah import {root}", {"adk"}),
    "adk imports an adapter": (
        "adk/__init__.py",
        "from jennah.adapters import store",
        {"adk", "wiring"},
    ),
    "cli imports the adk integration": (
        "cli/main.py",
        "from jennah import adk",
        {"layers", "no-cycles"},
    ),
}


def project_options() -> dict[str, Any]:
    """pyproject.toml's [tool.importlinter], contracts included."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    options: dict[str, Any] = tomllib.loads(text)["tool"]["importlinter"]
    return options


def write_package(folder: Path, root: str, extra: dict[str, str] | None = None) -> Path:
    """The clean package under folder/jennah (its root module named `root`), plus `extra`
    lines appended to the named modules; returns `folder`."""
    files = {path.format(root=root): text.format(root=root) for path, text in CLEAN_PACKAGE.items()}
    for path, line in (extra or {}).items():
        files[path] = files.get(path, "") + line.format(root=root) + "\n"
    for path, text in files.items():
        target = folder / "jennah" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def lint(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """lint(folder, options) -> (broken contract ids, rendered report) for the package
    `jennah` found in `folder`, not the installed one."""

    def run(folder: Path, options: dict[str, Any]) -> tuple[set[str], str]:
        configuration.configure()  # what lint-imports does on start
        monkeypatch.delitem(sys.modules, "jennah", raising=False)
        monkeypatch.syspath_prepend(str(folder))
        session = copy.deepcopy(options)
        contracts = session.pop("contracts")
        for contract in contracts:  # the TOML reader's booleans are strings
            for key, value in contract.items():
                if isinstance(value, bool):
                    contract[key] = str(value)
        report = use_cases.create_report(
            UserOptions(session_options=session, contracts_options=contracts), cache_dir=None
        )
        assert not report.could_not_run, "the contracts are invalid"
        ids = {contract["name"]: contract["id"] for contract in contracts}
        broken = {
            ids[contract.name]
            for contract, check in report.get_contracts_and_checks()
            if not check.kept
        }
        return broken, rendered(report)

    yield run


def rendered(report: Any) -> str:
    """The report as lint-imports prints it, whitespace collapsed (the console wraps)."""
    console = output.console
    with console.capture() as captured:
        rendering.render_report(report)
    return " ".join(captured.get().split())


def test_the_contracts_hold_on_a_package_laid_out_as_the_layering_says(
    tmp_path: Path, lint: Any
) -> None:
    options = project_options()
    broken, report = lint(write_package(tmp_path, options["composition_root"]), options)
    assert broken == set(), report
    assert len(options["contracts"]) == 13


@pytest.mark.parametrize("case", WRONG_IMPORTS, ids=list(WRONG_IMPORTS))
def test_a_wrong_import_breaks_exactly_the_contracts_that_forbid_it(
    tmp_path: Path, lint: Any, case: str
) -> None:
    module, line, expected = WRONG_IMPORTS[case]
    options = project_options()
    package = write_package(tmp_path, options["composition_root"], {module: line})
    broken, report = lint(package, options)
    assert broken == expected, report


def test_every_contract_is_proven_breakable() -> None:
    proven = set().union(*(expected for _, _, expected in WRONG_IMPORTS.values()))
    assert proven == {contract["id"] for contract in project_options()["contracts"]}


def test_the_composition_root_is_named_in_one_option(tmp_path: Path, lint: Any) -> None:
    options = project_options()
    renamed = write_package(tmp_path, "wiring")
    broken, report = lint(renamed, {**options, "composition_root": "wiring"})
    assert broken == set(), report
    root = options["composition_root"]
    assert root not in (ROOT / "tests" / "support" / "layering.py").read_text(encoding="utf-8")
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text[text.index("[tool.importlinter]") :]
    assert section.count(root) == 1, "name the composition root only in composition_root"


def test_the_old_root_name_breaks_the_contracts_of_a_renamed_package(
    tmp_path: Path, lint: Any
) -> None:
    options = project_options()
    root = options["composition_root"]
    assert root != "wiring"
    with pytest.raises(ValueError, match=rf"module jennah\.{root} does not exist"):
        lint(write_package(tmp_path, "wiring"), options)


def test_a_domain_module_importing_a_store_and_the_api_importing_the_root_fail_on_a_copy_of_today(
    tmp_path: Path, lint: Any
) -> None:
    options = project_options()
    root = options["composition_root"]
    package = tmp_path / "jennah"
    shutil.copytree(
        ROOT / "shared" / "jennah", package, ignore=shutil.ignore_patterns("__pycache__")
    )
    with (package / "domain" / "rules.py").open("a", encoding="utf-8") as rules:
        rules.write("\nimport jennah.adapters.sqlite.store  # noqa: E402\n")
    with (package / "api" / "dto.py").open("a", encoding="utf-8") as dto:
        dto.write(f"\nimport jennah.{root}  # noqa: E402\n")

    broken, report = lint(tmp_path, options)

    assert {"domain", "api"} <= broken
    assert "jennah.domain imports only jennah.errors BROKEN" in report
    domain_section = report[report.index("jennah.domain imports only jennah.errors -") :]
    assert "jennah.domain.rules -> jennah.adapters.sqlite.store" in domain_section
    api_section = report[report.index("jennah.api imports only jennah.services, ports") :]
    assert f"jennah.api.dto -> jennah.{root}" in api_section


def test_the_placeholder_is_substituted_in_strings_and_lists() -> None:
    assert layering.substituted(["a.{composition_root}", "b"], "x") == ["a.x", "b"]
    assert layering.substituted("{composition_root} -> y", "x") == "x -> y"
    assert layering.substituted(True, "x") is True
