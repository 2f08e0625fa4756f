"""Every port has a fake in tests/unit/fakes.py, complete against its protocol.

A new port, or a new method or attribute on a port, fails here until its fake has it with a
signature that accepts every call the port's signature accepts.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any, Protocol

import pytest

import jennah.ports
from tests.unit.fakes import FAKES

# Ports that live outside jennah.ports for now.
# Ports declared outside jennah.ports (none since IdTokenVerifier became one).
OTHER_PORTS: list[type[Any]] = []


def is_protocol(candidate: object) -> bool:
    return inspect.isclass(candidate) and getattr(candidate, "_is_protocol", False)


def ports() -> list[type[Any]]:
    """Every Protocol class defined in a module of jennah.ports, and OTHER_PORTS."""
    found: list[type[Any]] = list(OTHER_PORTS)
    for info in pkgutil.iter_modules(jennah.ports.__path__, "jennah.ports."):
        module = importlib.import_module(info.name)
        found += [
            value
            for value in vars(module).values()
            if is_protocol(value) and value.__module__ == module.__name__
        ]
    return found


def members(port: type[Any]) -> tuple[list[str], list[str]]:
    """The port's methods and its data attributes (annotated, without a value)."""
    own = {
        name: value
        for klass in port.__mro__
        if klass not in (Protocol, object, *Protocol.__mro__)
        for name, value in vars(klass).items()
        if not name.startswith("_")
    }
    methods = sorted(name for name, value in own.items() if callable(value))
    annotations: dict[str, Any] = {}
    for klass in port.__mro__:
        annotations.update(getattr(klass, "__annotations__", {}))
    attributes = sorted(name for name in annotations if not name.startswith("_"))
    return methods, attributes


def incompatibility(port_method: Any, fake_method: Any) -> str | None:
    """Why the fake's method cannot take every call the port's accepts; None when it can."""
    wanted = list(inspect.signature(port_method).parameters.values())[1:]  # without self
    offered = inspect.signature(fake_method).parameters
    accepts_any_keyword = any(p.kind is p.VAR_KEYWORD for p in offered.values())
    positional = [
        p for p in offered.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    for index, parameter in enumerate(wanted):
        if parameter.kind is parameter.VAR_POSITIONAL:
            continue
        in_place = index < len(positional) and positional[index].name == parameter.name
        if parameter.kind is parameter.POSITIONAL_OR_KEYWORD and not in_place:
            return f"parameter {index + 1} must be {parameter.name!r}"
        match = offered.get(parameter.name)
        if match is None:
            if parameter.kind is parameter.KEYWORD_ONLY and accepts_any_keyword:
                continue
            return f"no parameter {parameter.name!r}"
        if parameter.default is not parameter.empty and match.default is match.empty:
            return f"{parameter.name!r} has a default in the port, none in the fake"
    names = {p.name for p in wanted}
    for parameter in offered.values():
        required = parameter.default is parameter.empty and parameter.kind not in (
            parameter.VAR_POSITIONAL,
            parameter.VAR_KEYWORD,
        )
        if parameter.name not in names and required:
            return f"the fake requires {parameter.name!r}, which the port does not pass"
    return None


def test_every_port_has_a_fake() -> None:
    missing = [port.__name__ for port in ports() if port not in FAKES]
    assert not missing, f"add a fake of {missing} to tests/unit/fakes.py FAKES"
    assert len(FAKES) == len(ports())


@pytest.mark.parametrize("port", list(FAKES), ids=lambda port: port.__name__)
def test_the_fake_has_every_method_and_attribute_of_its_port(port: type[Any]) -> None:
    fake = FAKES[port]()
    methods, attributes = members(port)
    assert methods, f"{port.__name__} declares no method"
    problems = [f"no method {name}" for name in methods if not callable(getattr(fake, name, None))]
    for name in methods:
        if callable(getattr(fake, name, None)):
            why = incompatibility(getattr(port, name), getattr(fake, name))
            if why is not None:
                problems.append(f"{name}: {why}")
    problems += [f"no attribute {name}" for name in attributes if not hasattr(fake, name)]
    assert not problems, f"{type(fake).__name__} against {port.__name__}: {problems}"


class _Port(Protocol):
    def get(self, key: str, at: int | None = None, *, strict: bool = False) -> str: ...


class _Complete:
    def get(self, key: str, at: int | None = None, *, strict: bool = False, x: int = 0) -> str:
        return key


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("def get(self, name, at=None, *, strict=False): ...", "parameter 1 must be 'key'"),
        ("def get(self, key, at, *, strict=False): ...", "'at' has a default in the port"),
        ("def get(self, key, at=None): ...", "no parameter 'strict'"),
        ("def get(self, key, at=None, *, strict=False, extra): ...", "the fake requires 'extra'"),
    ],
)
def test_an_incompatible_signature_is_named(source: str, problem: str) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    assert incompatibility(_Port.get, _Complete().get) is None
    why = incompatibility(_Port.get, namespace["get"].__get__(object()))
    assert why is not None and problem in why


def test_a_missing_method_is_named() -> None:
    class Lacking:
        pass

    methods, _ = members(_Port)
    assert methods == ["get"]
    assert not callable(getattr(Lacking(), "get", None))
