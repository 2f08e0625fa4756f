"""Writing one CommitPlan, or destroying one scope, inside an open SQLite transaction.

The caller owns the transaction (BEGIN IMMEDIATE … COMMIT / ROLLBACK); every
function here only issues statements, so any exception leaves nothing behind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jennah.adapters.sqlite import codec
from jennah.adapters.sqlite.schema import ROW_RANGE, SCOPED_TABLES, in_scope_range
from jennah.domain import rules
from jennah.domain.models import ClaimUpdate, CommitPlan, CommitResult, ScopeRef, Supersession
from jennah.errors import Aborted, AlreadyExists, NotFound

if TYPE_CHECKING:
    from sqlite3 import Connection

# A new row takes the next row id of its scope's range (schema.py: scope n's rows have ids
# n * ROW_RANGE + 1 to (n + 1) * ROW_RANGE - 1; _SCOPE_ORDINAL numbers the scope first).
# A replace never touches valid_at, invalid_at, superseded_by, status,
# created_at or retired_at: only supersessions change validity. Nor the reinforcement
# (only claim updates change it); a replace is the stored claim's next revision.
_UPSERT_RECORD = f"""
INSERT INTO memory_records (row_id, {codec.RECORD_COLUMNS}) VALUES (
  (SELECT 1 + coalesce(
     (SELECT max(row_id) FROM memory_records WHERE {in_scope_range("row_id", "o.ordinal")}),
     o.ordinal * {ROW_RANGE})
   FROM scope_ordinals AS o WHERE o.enterprise_id = :enterprise_id AND o.scope_id = :scope_id),
  :enterprise_id, :scope_id, :id, :key, :revision, :content_hash, :text, :summary, :about,
  :when_to_use, :type, :metadata, :strength, :pin, :authority, :confidence, :sensitivity,
  :valid_at, :invalid_at, :valid_until, :created_at, :updated_at, :retired_at, :status,
  :supersedes, :superseded_by, :durability, :reinforcement_count, :last_reinforced_at,
  :applies_to, :related, :needs_enrichment, :extensions,
  CASE WHEN :embedding IS NULL THEN NULL ELSE vec_f32(:embedding) END)
ON CONFLICT (enterprise_id, scope_id, id) DO UPDATE SET
  key = excluded.key, revision = memory_records.revision + 1,
  content_hash = excluded.content_hash,
  text = excluded.text, summary = excluded.summary, about = excluded.about,
  when_to_use = excluded.when_to_use, type = excluded.type, metadata = excluded.metadata,
  strength = excluded.strength, pin = excluded.pin, authority = excluded.authority,
  confidence = excluded.confidence, sensitivity = excluded.sensitivity,
  valid_until = excluded.valid_until, updated_at = excluded.updated_at,
  supersedes = coalesce(excluded.supersedes, memory_records.supersedes),
  durability = excluded.durability, applies_to = excluded.applies_to,
  related = excluded.related, needs_enrichment = excluded.needs_enrichment,
  extensions = excluded.extensions, embedding = excluded.embedding
"""

# The scope's number, the next one, unless it has one (WHERE true: an upsert's SELECT).
_SCOPE_ORDINAL = """
INSERT INTO scope_ordinals (enterprise_id, scope_id, ordinal)
SELECT ?, ?, 1 + coalesce(max(ordinal), 0) FROM scope_ordinals WHERE true
ON CONFLICT (enterprise_id, scope_id) DO NOTHING
"""

# node_type is assign-once: a stored class is kept, a NULL one may be set.
_UPSERT_NODE = """
INSERT INTO graph_nodes (enterprise_id, scope_id, node_id, label, node_type, properties,
                         created_at, updated_at)
VALUES (:enterprise_id, :scope_id, :node_id, :label, :node_type, :properties, :now, :now)
ON CONFLICT (enterprise_id, scope_id, node_id) DO UPDATE SET
  label = excluded.label,
  node_type = coalesce(graph_nodes.node_type, excluded.node_type),
  properties = excluded.properties,
  updated_at = excluded.updated_at
"""

_UPSERT_EDGE = """
INSERT INTO graph_edges (enterprise_id, scope_id, edge_id, source, relation, target, properties,
                         valid_at, invalid_at, created_at, updated_at, retired_at, supersedes,
                         superseded_by)
VALUES (:enterprise_id, :scope_id, :edge_id, :source, :relation, :target, :properties,
        :valid_at, :invalid_at, :now, :now, :retired_at, :supersedes, :superseded_by)
ON CONFLICT (enterprise_id, scope_id, edge_id) DO UPDATE SET
  source = excluded.source, relation = excluded.relation, target = excluded.target,
  properties = excluded.properties, updated_at = excluded.updated_at,
  supersedes = coalesce(excluded.supersedes, graph_edges.supersedes)
"""

_UPSERT_STEP = """
INSERT INTO execution_log_steps (enterprise_id, scope_id, step_id, tool_input, metadata,
                                 created_at)
VALUES (:enterprise_id, :scope_id, :step_id, :tool_input, :metadata, :now)
ON CONFLICT (enterprise_id, scope_id, step_id) DO UPDATE SET
  tool_input = excluded.tool_input, metadata = excluded.metadata
"""

# Evidence lines are append-only: a (memory, ref) already recorded is left as it is,
# so a replayed formation adds nothing.
_INSERT_EVIDENCE = """
INSERT INTO evidence (enterprise_id, scope_id, id, ref, quote, recorded_at)
VALUES (:enterprise_id, :scope_id, :id, :ref, :quote, :recorded_at)
ON CONFLICT (enterprise_id, scope_id, id, ref) DO NOTHING
"""

# A compile replaces the variant's brief whole.
_REPLACE_BRIEF = """
INSERT OR REPLACE INTO briefs (enterprise_id, scope_id, variant, text, token_count, expiries,
                               compiled_at)
VALUES (:enterprise_id, :scope_id, :variant, :text, :token_count, :expiries, :now)
"""

_APPEND_CHANGE = """
INSERT OR REPLACE INTO change_log (enterprise_id, scope_id, recorded_at, id, change, day,
                                   from_value, to_value)
VALUES (:enterprise_id, :scope_id, :recorded_at, :id, :change, :day, :from_value, :to_value)
"""

# A scope registers once: a later registration leaves the first one as it is.
_REGISTER_SCOPE = """
INSERT INTO scopes (enterprise_id, scope_id, kind, created_at, created_by, time_zone)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (enterprise_id, scope_id) DO NOTHING
"""

# Remember the destroyed scope's generation, so a recreated scope starts above it.
_RAISE_GENERATION_FLOOR = """
INSERT INTO generation_floor (singleton, generation)
SELECT 1, generation FROM scope_generations WHERE enterprise_id = ? AND scope_id = ?
ON CONFLICT (singleton) DO UPDATE SET generation = max(generation, excluded.generation)
"""

_INSERT_LINK = """
INSERT INTO memory_links (enterprise_id, scope_id, source_id, target_id, created_at)
VALUES (:enterprise_id, :scope_id, :source_id, :target_id, :now)
ON CONFLICT (enterprise_id, scope_id, source_id, target_id) DO NOTHING
"""


def write_plan(conn: Connection, plan: CommitPlan, commit_us: int) -> CommitResult:
    """Issue every statement of `plan`; supersessions run last, against the written rows."""
    scope = plan.scope
    _register(conn, plan, commit_us)
    _write_chunks(conn, plan, commit_us)
    _write_nodes(conn, plan, commit_us)
    _write_edges(conn, plan, commit_us)
    chunk_supersessions = sum(
        _supersede(conn, scope, "memory_records", "id", supersession, commit_us)
        for supersession in plan.chunk_supersessions
    )
    edge_supersessions = sum(
        _supersede(conn, scope, "graph_edges", "edge_id", supersession, commit_us)
        for supersession in plan.edge_supersessions
    )
    claims_updated = _update_claims(conn, plan, commit_us)
    _write_ledgers(conn, plan, commit_us)
    _write_briefs(conn, plan, commit_us)
    _write_suppressions(conn, plan, commit_us)
    return CommitResult(
        commit_timestamp=codec.required_datetime(commit_us),
        chunks_written=len(plan.chunks),
        nodes_written=len(plan.nodes),
        edges_written=len(plan.edges),
        chunk_supersessions=chunk_supersessions,
        edge_supersessions=edge_supersessions,
        claims_updated=claims_updated,
    )


def destroy_scope(conn: Connection, scope: ScopeRef) -> int:
    """Delete every row of the scope, registration included; returns the rows deleted.

    The triggers on memory_records drop the deleted rows from the keyword index.
    """
    key = (scope.enterprise_id, scope.scope_id)
    erased = 0
    for table in SCOPED_TABLES:
        cursor = conn.execute(f"DELETE FROM {table} WHERE enterprise_id = ? AND scope_id = ?", key)
        erased += cursor.rowcount
    conn.execute(_RAISE_GENERATION_FLOOR, key)
    conn.execute("DELETE FROM scope_generations WHERE enterprise_id = ? AND scope_id = ?", key)
    conn.execute("DELETE FROM scope_ordinals WHERE enterprise_id = ? AND scope_id = ?", key)
    return erased


def _register(conn: Connection, plan: CommitPlan, commit_us: int) -> None:
    """Register the scope at the commit time unless it is registered already."""
    record = plan.registration
    if record is not None:
        scope = plan.scope
        conn.execute(
            _REGISTER_SCOPE,
            (
                scope.enterprise_id,
                scope.scope_id,
                record.kind,
                commit_us,
                record.created_by,
                record.time_zone,
            ),
        )


def _execute_many(conn: Connection, statement: str, rows: list[Any]) -> None:
    """`statement` once per row; nothing at all for no rows (a plan leaves most of its
    collections empty, and every statement issued holds the write lock a little longer)."""
    if rows:
        conn.executemany(statement, rows)


def _keys(scope: ScopeRef, commit_us: int) -> dict[str, Any]:
    return {"enterprise_id": scope.enterprise_id, "scope_id": scope.scope_id, "now": commit_us}


def _write_chunks(conn: Connection, plan: CommitPlan, commit_us: int) -> None:
    if plan.chunks:
        conn.execute(_SCOPE_ORDINAL, (plan.scope.enterprise_id, plan.scope.scope_id))
    params = [codec.record_params(chunk, plan.scope, commit_us) for chunk in plan.chunks]
    _execute_many(conn, _UPSERT_RECORD, params)


def _write_nodes(conn: Connection, plan: CommitPlan, commit_us: int) -> None:
    keys = _keys(plan.scope, commit_us)
    _execute_many(
        conn,
        _UPSERT_NODE,
        [
            {
                **keys,
                "node_id": node.node_id,
                "label": node.label,
                "node_type": node.node_type,
                "properties": codec.to_json(node.properties),
            }
            for node in plan.nodes
        ],
    )


def _write_edges(conn: Connection, plan: CommitPlan, commit_us: int) -> None:
    keys = _keys(plan.scope, commit_us)
    _execute_many(
        conn,
        _UPSERT_EDGE,
        [
            {
                **keys,
                "edge_id": edge.edge_id,
                "source": edge.source,
                "relation": edge.relation,
                "target": edge.target,
                "properties": codec.to_json(edge.properties),
                "valid_at": codec.to_micros(edge.valid_at),
                "invalid_at": codec.to_micros(edge.invalid_at),
                "retired_at": codec.to_micros(edge.retired_at),
                "supersedes": edge.supersedes,
                "superseded_by": edge.superseded_by,
            }
            for edge in plan.edges
        ],
    )


def _require_memories(conn: Connection, scope: ScopeRef, ids: set[str]) -> None:
    """Evidence belongs to a memory record: one that exists (this plan's are written)."""
    for memory_id in sorted(ids):
        row = conn.execute(
            "SELECT 1 FROM memory_records WHERE enterprise_id = ? AND scope_id = ? AND id = ?",
            (scope.enterprise_id, scope.scope_id, memory_id),
        ).fetchone()
        if row is None:
            raise NotFound(
                f"the evidence names memory {memory_id}, which does not exist in this scope",
                metadata={"id": memory_id},
            )


def _supersede(
    conn: Connection,
    scope: ScopeRef,
    table: str,
    id_column: str,
    supersession: Supersession,
    commit_us: int,
) -> bool:
    """Apply one supersession; False when it was already applied identically."""
    where = f"enterprise_id = ? AND scope_id = ? AND {id_column} = ?"
    key = (scope.enterprise_id, scope.scope_id, supersession.target_id)
    row = conn.execute(
        f"SELECT valid_at, invalid_at, superseded_by FROM {table} WHERE {where}", key
    ).fetchone()
    if row is None:
        kind = "chunk" if table == "memory_records" else "edge"
        raise NotFound(
            f"the supersession names {kind} {supersession.target_id}, which does not exist "
            "in this scope",
            metadata={"id": supersession.target_id},
        )
    invalid_at = codec.required_micros(supersession.invalid_at)
    if not rules.check_supersession(
        supersession.target_id,
        codec.from_micros(row["valid_at"]),
        codec.from_micros(row["invalid_at"]),
        row["superseded_by"],
        codec.required_datetime(invalid_at),
        supersession.superseded_by,
    ):
        return False
    status = ", status = 'superseded', revision = revision + 1" if table == "memory_records" else ""
    conn.execute(
        f"UPDATE {table} SET invalid_at = ?, superseded_by = ?, updated_at = ?{status} "
        f"WHERE {where}",
        (invalid_at, supersession.superseded_by, commit_us, *key),
    )
    return True


def _write_ledgers(conn: Connection, plan: CommitPlan, commit_us: int) -> None:
    """Evidence, links, execution-log steps and the formation key."""
    keys = _keys(plan.scope, commit_us)
    _require_memories(conn, plan.scope, {line.memory_id for line in plan.evidence})
    _execute_many(
        conn,
        _INSERT_EVIDENCE,
        [
            {
                **keys,
                "id": line.memory_id,
                "ref": line.ref,
                "quote": line.quote,
                "recorded_at": codec.required_micros(line.recorded_at),
            }
            for line in plan.evidence
        ],
    )
    _execute_many(
        conn,
        _INSERT_LINK,
        [{**keys, "source_id": ln.source_id, "target_id": ln.target_id} for ln in plan.links],
    )
    _execute_many(
        conn,
        _UPSERT_STEP,
        [
            {
                **keys,
                "step_id": step.step_id,
                "tool_input": step.tool_input,
                "metadata": codec.to_json(step.metadata),
            }
            for step in plan.steps
        ],
    )
    if plan.formation_key is not None:
        _claim_formation_key(conn, plan, commit_us)


def _claim_formation_key(conn: Connection, plan: CommitPlan, commit_us: int) -> None:
    record = plan.formation_key
    assert record is not None
    key = (plan.scope.enterprise_id, plan.scope.scope_id, record.formation_key)
    claimed = conn.execute(
        "SELECT 1 FROM formation_keys WHERE enterprise_id = ? AND scope_id = ? "
        "AND formation_key = ?",
        key,
    ).fetchone()
    if claimed is not None:
        raise Aborted(
            f"formationKey {record.formation_key!r} was committed by another request first; "
            "resend with the same formationKey to get its receipt",
            reason="FORMATION_KEY_CLAIMED",
            metadata={"formationKey": record.formation_key},
        )
    conn.execute(
        "INSERT INTO formation_keys (enterprise_id, scope_id, formation_key, fingerprint, "
        "receipt_json, committed_at) VALUES (?, ?, ?, ?, ?, ?)",
        (*key, record.fingerprint, record.receipt_json, commit_us),
    )


def _update_claims(conn: Connection, plan: CommitPlan, commit_us: int) -> int:
    """Apply the claim updates in order, each under its revision check (see ClaimUpdate)."""
    for update in plan.claim_updates:
        _update_claim(conn, plan.scope, update, commit_us)
    return len(plan.claim_updates)


def _update_claim(conn: Connection, scope: ScopeRef, update: ClaimUpdate, commit_us: int) -> None:
    key = (scope.enterprise_id, scope.scope_id, update.memory_id)
    row = conn.execute(
        "SELECT revision FROM memory_records WHERE enterprise_id = ? AND scope_id = ? AND id = ?",
        key,
    ).fetchone()
    rules.check_claim_revision(update, None if row is None else int(row[0]))
    changes = {
        "status": None if update.status is None else update.status.value,
        "durability": None if update.durability is None else update.durability.value,
        "reinforcement_count": update.reinforcement_count,
        "last_reinforced_at": codec.to_micros(update.last_reinforced_at),
        "superseded_by": update.superseded_by,
        "related": None if update.related is None else codec.list_to_json(update.related),
    }
    sets = [f"{column} = :{column}" for column, value in changes.items() if value is not None]
    # only an open window is closed: a closed one keeps its end
    sets.append("invalid_at = coalesce(invalid_at, :invalid_at)")
    conn.execute(
        f"UPDATE memory_records SET {', '.join(sets)}, revision = revision + 1, "
        "updated_at = :now WHERE enterprise_id = :enterprise_id AND scope_id = :scope_id "
        "AND id = :id",
        {
            **changes,
            "invalid_at": codec.to_micros(update.invalid_at),
            "now": commit_us,
            "enterprise_id": scope.enterprise_id,
            "scope_id": scope.scope_id,
            "id": update.memory_id,
        },
    )


_INSERT_SUPPRESSION = """
INSERT INTO suppressions (enterprise_id, scope_id, id, memory_id, about, summary, text,
                          embedding, created_at, created_by)
VALUES (:enterprise_id, :scope_id, :id, :memory_id, :about, :summary, :text,
        CASE WHEN :embedding IS NULL THEN NULL ELSE vec_f32(:embedding) END,
        COALESCE(:created_at, :now), :created_by)
ON CONFLICT (enterprise_id, scope_id, id) DO NOTHING
"""


def _write_suppressions(conn: Connection, plan: CommitPlan, commit_us: int) -> None:
    """Delete the removed suppression rules (NotFound for one not stored), then insert
    the new ones (AlreadyExists for an id stored already)."""
    keys = _keys(plan.scope, commit_us)
    for suppression_id in plan.suppressions_removed:
        deleted = conn.execute(
            "DELETE FROM suppressions WHERE enterprise_id = ? AND scope_id = ? AND id = ?",
            (keys["enterprise_id"], keys["scope_id"], suppression_id),
        )
        if deleted.rowcount == 0:
            raise NotFound(
                f"suppression {suppression_id!r} was not found in scope {plan.scope.scope_id!r}",
                metadata={"suppressionId": suppression_id},
            )
    for rule in plan.suppressions:
        inserted = conn.execute(
            _INSERT_SUPPRESSION,
            {
                **keys,
                "id": rule.id,
                "memory_id": rule.memory_id,
                "about": rule.about,
                "summary": rule.summary,
                "text": rule.text,
                "embedding": codec.embedding_blob(rule.embedding, f"suppressions[{rule.id}]"),
                "created_at": codec.to_micros(rule.created_at),  # None: the commit time
                "created_by": rule.created_by,
            },
        )
        if inserted.rowcount == 0:
            raise AlreadyExists(
                f"suppression {rule.id} exists already in scope {plan.scope.scope_id!r}",
                metadata={"suppressionId": rule.id},
            )


def _write_briefs(conn: Connection, plan: CommitPlan, commit_us: int) -> None:
    """The compiled briefs (each replaces its variant's) and the change-log lines."""
    keys = _keys(plan.scope, commit_us)
    _execute_many(
        conn,
        _REPLACE_BRIEF,
        [
            {
                **keys,
                "variant": brief.variant.value,
                "text": brief.text,
                "token_count": brief.token_count,
                "expiries": codec.times_to_json(brief.expiries),
            }
            for brief in plan.briefs
        ],
    )
    _execute_many(
        conn,
        _APPEND_CHANGE,
        [
            {
                "enterprise_id": plan.scope.enterprise_id,
                "scope_id": plan.scope.scope_id,
                "recorded_at": commit_us
                if entry.recorded_at is None
                else codec.required_micros(entry.recorded_at),
                "id": entry.memory_id,
                "change": entry.change,
                "day": entry.day,
                "from_value": entry.from_value,
                "to_value": entry.to_value,
            }
            for entry in plan.change_log
        ],
    )
