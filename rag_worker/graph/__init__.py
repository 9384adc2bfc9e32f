"""The knowledge-graph tools' machinery.

Reading (handlers in rag_worker.handlers.graph): a snapshot of the graph (`snapshot`),
subgraph selection (`browse`), `statistics`, `exports`, entity `search`, `relationships`
walks, `sources` of entities, export `files` and result `messages`.
Editing (handlers in rag_worker.handlers.editing): validated `edit_plan`, `editing` through
LightRAG's own edit calls, and `undo` snapshots that make an edit all-or-nothing.
"""
