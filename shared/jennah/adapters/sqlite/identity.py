"""The identity store of the embedded default: control tables in the memory store's file.

Enterprises, users, API keys and role bindings live in their own tables
(`enterprises`, `users`, `api_keys`, `role_bindings`) of the same SQLite file
as the memory store, created idempotently on open. Timestamps are INTEGER
microseconds since the Unix epoch (UTC; a naive datetime is taken to be UTC),
so they round-trip exactly. Selectors are JSON arrays.

Users are keyed by (enterprise_id, principal), and indexed by principal for
`find_users`. Files an older build wrote keyed them by principal alone (a
principal could be a user of one enterprise only); opening such a file rebuilds
the table in place, every row kept, in the transaction that creates the tables
(the table's own key says which shape it has, so the upgrade runs once).

Thread-safe: writes go through one connection under a lock, each in a
BEGIN IMMEDIATE transaction; reads use pooled connections (WAL: readers never
block the writer, and the busy timeout covers other processes' writes).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jennah.adapters.sqlite.codec import from_micros, to_micros
from jennah.adapters.sqlite.connection import ControlFile, IntegrityError
from jennah.domain.access import ApiKey, Enterprise, Role, RoleBinding, User
from jennah.errors import AlreadyExists

if TYPE_CHECKING:
    from sqlite3 import Connection, Row

_USERS = """
CREATE TABLE IF NOT EXISTS users (
  enterprise_id TEXT NOT NULL,
  principal TEXT NOT NULL,
  token_hash TEXT,
  created_at INTEGER,
  PRIMARY KEY (enterprise_id, principal)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS users_by_principal ON users (principal, enterprise_id)
"""

_TABLES = f"""
CREATE TABLE IF NOT EXISTS enterprises (
  enterprise_id TEXT NOT NULL PRIMARY KEY,
  display_name TEXT NOT NULL,
  created_at INTEGER
) WITHOUT ROWID;
{_USERS};

CREATE TABLE IF NOT EXISTS api_keys (
  key_id TEXT NOT NULL PRIMARY KEY,
  enterprise_id TEXT NOT NULL,
  secret_hash TEXT NOT NULL,
  display_name TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expire_time INTEGER,
  revoked_at INTEGER
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS api_keys_by_enterprise ON api_keys (enterprise_id, key_id);

CREATE TABLE IF NOT EXISTS role_bindings (
  enterprise_id TEXT NOT NULL,
  principal TEXT NOT NULL,
  role TEXT NOT NULL,
  agent_selectors TEXT NOT NULL CHECK (json_valid(agent_selectors)),
  subject_selectors TEXT NOT NULL CHECK (json_valid(subject_selectors)),
  PRIMARY KEY (enterprise_id, principal, role)
) WITHOUT ROWID
"""

_USER_COLUMNS = "enterprise_id, principal, token_hash, created_at"
_API_KEY_COLUMNS = (
    "key_id, enterprise_id, secret_hash, display_name, created_by, created_at, "
    "expire_time, revoked_at"
)
_BINDING_COLUMNS = "enterprise_id, principal, role, agent_selectors, subject_selectors"


class SqliteIdentityStore:
    """IdentityStore on a SQLite file (its control tables created if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file = ControlFile(self.path, "identity store", _TABLES, _key_users_by_enterprise)

    def close(self) -> None:
        self._file.close()

    # enterprises

    def create_enterprise(
        self,
        enterprise: Enterprise,
        users: Sequence[User] = (),
        bindings: Sequence[RoleBinding] = (),
    ) -> None:
        with self._file.transaction() as conn:
            try:
                conn.execute(
                    "INSERT INTO enterprises (enterprise_id, display_name, created_at) "
                    "VALUES (?, ?, ?)",
                    (
                        enterprise.enterprise_id,
                        enterprise.display_name,
                        to_micros(enterprise.created_at),
                    ),
                )
            except IntegrityError as exc:
                raise AlreadyExists(
                    f"enterprise {enterprise.enterprise_id!r} already exists", field="enterprise"
                ) from exc
            for user in users:
                _put_user(conn, user)
            for binding in bindings:
                _put_binding(conn, binding)

    def delete_enterprise(self, enterprise_id: str) -> None:
        with self._file.transaction() as conn:
            for table in ("role_bindings", "api_keys", "users", "enterprises"):
                conn.execute(f"DELETE FROM {table} WHERE enterprise_id = ?", (enterprise_id,))

    def get_enterprise(self, enterprise_id: str) -> Enterprise | None:
        row = self._read_one(
            "SELECT enterprise_id, display_name, created_at FROM enterprises "
            "WHERE enterprise_id = ?",
            (enterprise_id,),
        )
        if row is None:
            return None
        return Enterprise(
            enterprise_id=row["enterprise_id"],
            display_name=row["display_name"],
            created_at=from_micros(row["created_at"]),
        )

    # users

    def put_user(self, user: User) -> None:
        with self._file.transaction() as conn:
            _put_user(conn, user)

    def get_user(self, enterprise_id: str, principal: str) -> User | None:
        row = self._read_one(
            f"SELECT {_USER_COLUMNS} FROM users WHERE enterprise_id = ? AND principal = ?",
            (enterprise_id, principal),
        )
        return None if row is None else _user(row)

    def find_users(self, principal: str) -> list[User]:
        rows = self._read_all(
            f"SELECT {_USER_COLUMNS} FROM users WHERE principal = ? ORDER BY enterprise_id",
            (principal,),
        )
        return [_user(row) for row in rows]

    # API keys

    def create_api_key(self, key: ApiKey) -> None:
        with self._file.transaction() as conn:
            try:
                conn.execute(
                    f"INSERT INTO api_keys ({_API_KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        key.key_id,
                        key.enterprise_id,
                        key.secret_hash,
                        key.display_name,
                        key.created_by,
                        to_micros(key.created_at),
                        to_micros(key.expire_time),
                        to_micros(key.revoked_at),
                    ),
                )
            except IntegrityError as exc:
                raise AlreadyExists(f"API key id {key.key_id!r} is taken", field="keyId") from exc

    def get_api_key(self, key_id: str) -> ApiKey | None:
        row = self._read_one(f"SELECT {_API_KEY_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,))
        return None if row is None else _api_key(row)

    def list_api_keys(
        self, enterprise_id: str, after: str | None = None, limit: int | None = None
    ) -> list[ApiKey]:
        rows = self._read_all(
            f"SELECT {_API_KEY_COLUMNS} FROM api_keys WHERE enterprise_id = ? AND key_id > ? "
            "ORDER BY key_id LIMIT ?",
            (enterprise_id, after or "", _limit(limit)),
        )
        return [_api_key(row) for row in rows]

    def revoke_api_key(self, enterprise_id: str, key_id: str, at: datetime) -> ApiKey | None:
        """Set revoked_at (kept if already set); None when the enterprise has no such key."""
        with self._file.transaction() as conn:
            conn.execute(
                "UPDATE api_keys SET revoked_at = ? "
                "WHERE enterprise_id = ? AND key_id = ? AND revoked_at IS NULL",
                (to_micros(at), enterprise_id, key_id),
            )
            row = conn.execute(
                f"SELECT {_API_KEY_COLUMNS} FROM api_keys WHERE enterprise_id = ? AND key_id = ?",
                (enterprise_id, key_id),
            ).fetchone()
        return None if row is None else _api_key(row)

    # role bindings

    def put_binding(self, binding: RoleBinding) -> None:
        with self._file.transaction() as conn:
            _put_binding(conn, binding)

    def delete_binding(self, enterprise_id: str, principal: str, role: Role) -> bool:
        with self._file.transaction() as conn:
            deleted = conn.execute(
                "DELETE FROM role_bindings WHERE enterprise_id = ? AND principal = ? AND role = ?",
                (enterprise_id, principal, role.value),
            ).rowcount
        return bool(deleted)

    def list_bindings(
        self,
        enterprise_id: str,
        principal: str | None = None,
        after: tuple[str, str] | None = None,
        limit: int | None = None,
    ) -> list[RoleBinding]:
        query = f"SELECT {_BINDING_COLUMNS} FROM role_bindings WHERE enterprise_id = ?"
        params: tuple[str | int, ...] = (enterprise_id,)
        if principal is not None:
            query += " AND principal = ?"
            params += (principal,)
        if after is not None:
            query += " AND (principal, role) > (?, ?)"
            params += after
        rows = self._read_all(query + " ORDER BY principal, role LIMIT ?", (*params, _limit(limit)))
        return [_binding(row) for row in rows]

    # plumbing

    def _read_one(self, query: str, params: tuple[Any, ...]) -> Row | None:
        with self._file.reader() as conn:
            row: Row | None = conn.execute(query, params).fetchone()
            return row

    def _read_all(self, query: str, params: tuple[Any, ...]) -> list[Row]:
        with self._file.reader() as conn:
            return list(conn.execute(query, params).fetchall())


def _limit(limit: int | None) -> int:
    """SQLite's LIMIT: -1 is none."""
    return -1 if limit is None else limit


def _put_user(conn: Connection, user: User) -> None:
    conn.execute(
        f"INSERT OR REPLACE INTO users ({_USER_COLUMNS}) VALUES (?, ?, ?, ?)",
        (user.enterprise_id, user.principal, user.token_hash, to_micros(user.created_at)),
    )


def _put_binding(conn: Connection, binding: RoleBinding) -> None:
    conn.execute(
        f"INSERT OR REPLACE INTO role_bindings ({_BINDING_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
        (
            binding.enterprise_id,
            binding.principal,
            binding.role.value,
            json.dumps(binding.agent_selectors),
            json.dumps(binding.subject_selectors),
        ),
    )


def _key_users_by_enterprise(conn: Connection) -> None:
    """Rebuild a `users` table keyed by principal alone (older builds) keyed by
    (enterprise_id, principal), keeping every row; nothing to do on any other file."""
    columns = conn.execute("PRAGMA table_info(users)").fetchall()
    key = [c["name"] for c in sorted(columns, key=lambda c: c["pk"]) if c["pk"]]
    if key != ["principal"]:
        return  # a new file (no table yet) or one already keyed by enterprise
    conn.execute("ALTER TABLE users RENAME TO users_keyed_by_principal")
    for statement in _USERS.split(";"):
        conn.execute(statement)
    conn.execute(
        f"INSERT INTO users ({_USER_COLUMNS}) SELECT {_USER_COLUMNS} FROM users_keyed_by_principal"
    )
    conn.execute("DROP TABLE users_keyed_by_principal")


def _user(row: Row) -> User:
    return User(
        enterprise_id=row["enterprise_id"],
        principal=row["principal"],
        token_hash=row["token_hash"],
        created_at=from_micros(row["created_at"]),
    )


def _api_key(row: Row) -> ApiKey:
    created_at = from_micros(row["created_at"])
    assert created_at is not None
    return ApiKey(
        enterprise_id=row["enterprise_id"],
        key_id=row["key_id"],
        secret_hash=row["secret_hash"],
        display_name=row["display_name"],
        created_by=row["created_by"],
        created_at=created_at,
        expire_time=from_micros(row["expire_time"]),
        revoked_at=from_micros(row["revoked_at"]),
    )


def _binding(row: Row) -> RoleBinding:
    return RoleBinding(
        enterprise_id=row["enterprise_id"],
        principal=row["principal"],
        role=Role(row["role"]),
        agent_selectors=json.loads(row["agent_selectors"]),
        subject_selectors=json.loads(row["subject_selectors"]),
    )
