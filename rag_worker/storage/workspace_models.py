"""The models every workspace of this worker shares (embedding model, tokenizer, LLM function),
built once, and what each workspace gets of them: its own share of the local embedding model,
and a check that its vectors came from the model the server uses now.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from config.settings import Settings
from protocol import ErrorCode, RagError
from rag_worker.bindings import build_components
from rag_worker.embedded.models import default_threads
from rag_worker.storage.workspace import indexing_share


class WorkspaceModels:
    """Built on the first workspace's opening, shared by every later one."""

    def __init__(self, settings: Settings, limiter: anyio.CapacityLimiter) -> None:
        self._settings, self._limiter = settings, limiter
        self._root = Path(settings.data_dir)
        self._components: Any = None

    async def for_workspace(self, workspace: str) -> dict[str, Any]:
        """The shared models, with this workspace's own share of the local embedding model."""
        if self._components is None:  # embedding model, tokenizer and LLM function: built once
            self._components = await build_components(self._settings, self._limiter)
        components = dict(self._components)
        self._check_embedding_model(workspace, components)
        if str(components.get("embedding_model_id", "")).startswith("onnx:"):
            # One batch per indexing thread plus one ready to start: fair turns, threads never idle.
            components["embedding_func"] = indexing_share(components["embedding_func"], default_threads() + 1)
        return components

    def _check_embedding_model(self, workspace: str, components: dict[str, Any]) -> None:
        """Never mix vectors of two embedding models in one local index (SPEC §6)."""
        marker = self._root / workspace / "embedding_model.json"
        model_id = str(components.get("embedding_model_id") or components.get("embedding_name"))
        if marker.exists():
            recorded = json.loads(marker.read_text()).get("model_id")
            if recorded != model_id:
                raise RagError(
                    ErrorCode.CONFIGURATION_ERROR,
                    f"This knowledge base was indexed with the embedding model {recorded!r}, but the server "
                    f"now uses {model_id!r}; vectors of different models cannot be mixed.",
                    suggested_action=(
                        "Switch the embedding configuration back, or point WORKING_DIR at a new data "
                        "directory and re-index the documents."
                    ),
                )
        else:
            marker.write_text(json.dumps({"model_id": model_id}))
