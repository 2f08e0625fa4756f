"""memory:export and memory:import: a scope's memory as OKF files in a .tar.gz, and back."""

from __future__ import annotations

from jennah.api import dto
from jennah.api.handlers import Call, Reply
from jennah.domain import okf_archive
from jennah.services import okf as okf_service


def export(call: Call) -> Reply:
    files = okf_service.export_files(call.services.store, call.scope.ref)
    name = f"{call.scope.ref.scope_id}.okf.tar.gz"
    return Reply(
        {},
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
        content=okf_archive.pack(files),
        media_type=okf_archive.MEDIA_TYPE,
    )


def import_(call: Call) -> Reply:
    files = okf_archive.unpack(call.request)
    result = okf_service.import_files(
        files,
        call.scope.ref,
        call.services.store,
        call.services.embedder,
        registration=call.scope.registration,
    )
    services = call.services  # then the scope's lifecycle pass, like any write of claims
    services.passes(services.store, call.scope.ref, services.now())
    return Reply(
        dto.ImportResponse(
            claims_imported=result.claims,
            evidence_lines_imported=result.evidence_lines,
            nodes_imported=result.nodes,
            edges_imported=result.edges,
            suppressions_imported=result.suppressions,
        )
    )
