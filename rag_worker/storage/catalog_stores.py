"""Where our per-document records live when the KV storage cannot take a new namespace.

LightRAG's JSON, Redis and Mongo KV storages accept any namespace, so the catalog is one
more namespace there.  A backend whose row in `config.backends` names a `catalog_store` keeps
the records in the store of that kind below: `PGKVStorage` only knows LightRAG's own tables,
so on PostgreSQL (`postgres_table`) the records go to a table of ours, `LIGHTRAG_MCP_DOCUMENTS`, through LightRAG's shared
connection pool (same server, same credentials, same `workspace` column discipline).
"""

from __future__ import annotations

from typing import Any

import orjson

TABLE = "LIGHTRAG_MCP_DOCUMENTS"
CREATE = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    workspace VARCHAR(255) NOT NULL,
    id VARCHAR(255) NOT NULL,
    record JSONB NOT NULL,
    update_time TIMESTAMP(0) DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT {TABLE}_PK PRIMARY KEY (workspace, id)
)"""
UPSERT = f"""INSERT INTO {TABLE} (workspace, id, record, update_time) VALUES ($1, $2, $3::jsonb, CURRENT_TIMESTAMP)
ON CONFLICT (workspace, id) DO UPDATE SET record = EXCLUDED.record, update_time = CURRENT_TIMESTAMP"""


class PGCatalogStore:
    """The KV calls DocumentCatalog makes, on a PostgreSQL table of our own."""

    def __init__(self, workspace: str, vector_storage: str | None) -> None:
        self._workspace = workspace
        self._vector_storage = vector_storage
        self._db: Any = None

    @property
    def workspace(self) -> str:
        return self._workspace

    async def initialize(self) -> None:
        from lightrag.kg.postgres_impl import ClientManager  # deferred: it imports the asyncpg driver

        self._db = await ClientManager.get_client(vector_storage=self._vector_storage)
        await self._db.execute(CREATE)

    async def finalize(self) -> None:
        if self._db is not None:
            from lightrag.kg.postgres_impl import ClientManager  # deferred: it imports the asyncpg driver

            await ClientManager.release_client(self._db)
            self._db = None

    async def get_by_id(self, doc_id: str) -> dict[str, Any] | None:
        row = await self._db.query(f"SELECT record FROM {TABLE} WHERE workspace=$1 AND id=$2", [self._workspace, doc_id])
        return _decode(row["record"]) if row else None

    async def get_by_ids(self, doc_ids: list[str]) -> list[dict[str, Any] | None]:
        if not doc_ids:
            return []
        rows = await self._db.query(
            f"SELECT id, record FROM {TABLE} WHERE workspace=$1 AND id = ANY($2::varchar[])",
            [self._workspace, list(doc_ids)],
            multirows=True,
        )
        found = {row["id"]: _decode(row["record"]) for row in rows or []}
        return [found.get(doc_id) for doc_id in doc_ids]

    async def upsert(self, data: dict[str, dict[str, Any]]) -> None:
        for doc_id, record in data.items():
            await self._db.execute(
                UPSERT, {"workspace": self._workspace, "id": doc_id, "record": orjson.dumps(record).decode()}
            )

    async def delete(self, doc_ids: list[str]) -> None:
        if doc_ids:
            await self._db.execute(
                f"DELETE FROM {TABLE} WHERE workspace=$1 AND id = ANY($2::varchar[])",
                {"workspace": self._workspace, "ids": list(doc_ids)},
            )

    async def drop(self) -> None:
        """Every record of this workspace (a migration starting over)."""
        await self._db.execute(f"DELETE FROM {TABLE} WHERE workspace=$1", {"workspace": self._workspace})

    async def index_done_callback(self) -> None:
        """Every write above is committed at once."""


def _decode(value: Any) -> dict[str, Any]:
    return dict(orjson.loads(value)) if isinstance(value, str | bytes) else dict(value)


#: A backend row's `catalog_store` → the store that keeps the catalog there.
TABLE_STORES: dict[str | None, type[PGCatalogStore]] = {"postgres_table": PGCatalogStore}
