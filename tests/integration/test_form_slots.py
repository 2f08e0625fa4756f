"""`jnh serve`'s formation pool: one delivery at a time does platform work (the process's
Python), and a delivery gives its slot up while a model that takes time answers.

The app on a real SqliteStore with the in-process pool; threads coordinate by events,
never by sleeping for a while (the one bounded wait, that a delivery is held back, can
only pass wrongly on a slow machine, never fail wrongly).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from jennah.adapters.models.scripted import ScriptedModel
from jennah.ports.model import ModelResult
from tests.integration.test_api_form import TOKYO, _extraction, ok, sqlite_api
from tests.integration.test_formation_operations import poll
from tests.support.threads import WAIT_S, until

ONE_FACT = _extraction(("The user lives in Tokyo.", "I live in Tokyo"))


class _Gated(ScriptedModel):
    """Scripted answers, each call held until `release`; `both_in` once two calls are
    inside at once."""

    def __init__(self, *answers: Any) -> None:
        super().__init__(answers)
        self.inside = 0
        self.both_in = threading.Event()
        self.release = threading.Event()
        self._count = threading.Lock()

    def generate(self, *args: Any, **kwargs: Any) -> ModelResult:
        with self._count:
            self.inside += 1
            if self.inside == 2:
                self.both_in.set()
        try:
            assert self.release.wait(WAIT_S)
            return super().generate(*args, **kwargs)
        finally:
            with self._count:
                self.inside -= 1


def test_deliveries_wait_on_a_model_that_takes_time_together(tmp_path: Path) -> None:
    model = _Gated(ONE_FACT, ONE_FACT)
    with sqlite_api(tmp_path, model, local_form_workers=2) as api:
        names = [
            ok(api.post(f"/v1/agents/{agent}/memory:form", TOKYO | {"async": True}))["name"]
            for agent in ("bot-a", "bot-b")
        ]
        # both in their model call at once: the first gave its platform slot up there
        assert model.both_in.wait(WAIT_S)
        model.release.set()
        assert [poll(api, name)["metadata"]["state"] for name in names] == ["SUCCEEDED"] * 2


def test_a_delivery_waits_for_the_platform_slot(tmp_path: Path) -> None:
    with sqlite_api(tmp_path) as api:  # the rules model: platform work from end to end
        slots = api.container.form_slots
        with slots.held():
            name = ok(api.post("/v1/agents/bot-a/memory:form", TOKYO | {"async": True}))["name"]
            until(lambda: slots.waiting() == 1)  # the delivery asks for the slot held here
            assert ok(api.get(f"/v1/{name}"))["done"] is False
        assert poll(api, name)["metadata"]["state"] == "SUCCEEDED"
