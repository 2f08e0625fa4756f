"""The Firestore client of the production deployment, built from Settings."""

from __future__ import annotations

from typing import Any

from jennah.settings import Settings


def firestore_client(settings: Settings) -> Any:
    """A google.cloud.firestore.Client for the configured project and database.

    FIRESTORE_EMULATOR_HOST, when set, points it at the emulator (the client
    library reads it). Build it lazily: importing the library is slow.
    """
    from google.cloud import firestore

    return firestore.Client(
        project=settings.firestore_project, database=settings.firestore_database
    )
