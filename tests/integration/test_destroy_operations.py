"""Destroying a scope erases its memory:form operations (they hold the turns sent to it),
and nothing of another scope's; the embedded default's pool deletes expired operations.

Integration: the SQLite stores and the local pool of workers of `jnh serve`'s container."""

from __future__ import annotations

from pathlib import Path

from tests.integration.test_api_form import TOKYO, sqlite_api


def test_destroying_a_scope_erases_its_operations_and_no_others(tmp_path: Path) -> None:
    with sqlite_api(tmp_path) as api:
        operations = api.container.operations
        names = {}
        for agent in ("doomed", "kept"):
            answer = api.post(f"/v1/agents/{agent}/memory:form", {**TOKYO, "async": True})
            assert answer.status_code == 200, answer.get_json()
            names[agent] = answer.get_json()["name"].removeprefix("operations/")
        api.container.tasks.close()  # let both formations finish
        for agent, name in names.items():
            assert operations.get("local", name) is not None, agent
        assert api.delete("/v1/scopes/doomed").status_code == 200
        assert operations.get("local", names["doomed"]) is None
        assert operations.get("local", names["kept"]) is not None
        assert api.get(f"/v1/operations/{names['doomed']}").status_code == 404


def test_the_local_workers_delete_expired_operations(tmp_path: Path) -> None:
    """The embedded default's stand-in for Firestore's TTL policy: after a delivery, the
    pool sweeps operations past their expire_time (7 days after creation)."""
    from datetime import timedelta

    from jennah.domain.operations import RETENTION

    with sqlite_api(tmp_path) as api:
        clock = [api.container.now()]
        api.container.now = lambda: clock[0]
        first = api.post("/v1/agents/bot/memory:form", TOKYO).get_json()
        assert first["candidates"]
        (old,) = _operation_ids(api)
        clock[0] += RETENTION + timedelta(hours=2)  # past its expiry, and the sweep interval
        second = {**TOKYO, "formationKey": "again"}
        assert api.post("/v1/agents/bot/memory:form", second).status_code == 200
        # The answer comes when the operation is done; the worker sweeps after that. Closing
        # the pool waits for the delivery in flight, sweep included (was a race).
        api.container.tasks.close()  # type: ignore[attr-defined]
        assert old not in _operation_ids(api)
        assert len(_operation_ids(api)) == 1  # the new one stays


def _operation_ids(api: object) -> list[str]:
    from tests.integration.test_api_form import rows

    return [  # the column holding "op_…" ids
        next(value for value in row if isinstance(value, str) and value.startswith("op_"))
        for row in rows(api)["formation_operations"]  # type: ignore[arg-type]
    ]
