"""Query tool methods: the full query, the simple LibreChat form, and the streamed form."""

from __future__ import annotations

from protocol.schema import MethodSpec, array, boolean, integer, nullable, number, obj, open_object, string

MODES = ["naive", "local", "global", "hybrid", "mix", "bypass"]

QUERY_TEXT = string("The question or search text.", max_length=10_000, min_length=1)

QUERY_PARAMS = obj(
    {
        "query": QUERY_TEXT,
        "mode": string(
            "Retrieval mode: naive (vector search over chunks), local (entities), global (relations), "
            "hybrid (local+global), mix (graph + vectors; best default), bypass (send the query to the LLM "
            "without retrieval; needs an LLM).",
            enum=MODES,
            default="mix",
        ),
        "top_k": integer("Entities/relations to retrieve.", minimum=1, maximum=200, default=40),
        "chunk_top_k": integer("Text chunks to include.", minimum=1, maximum=100, default=10),
        "cosine_threshold": number("Minimum vector similarity (0-1).", maximum=1.0, default=0.2),
        "max_tokens": integer("Token budget for the retrieved context.", minimum=1000, maximum=128_000, default=30_000),
        "enable_rerank": boolean("Rerank chunks (needs a configured reranker).", default=False),
        "history_turns": integer("Conversation turns of history to use.", maximum=20, default=3),
        "conversation_history": array(
            obj(
                {
                    "role": string(enum=["user", "assistant", "system"]),
                    "content": string(max_length=20_000),
                },
                required=["role", "content"],
            ),
            "Earlier messages, oldest first.",
            max_items=100,
        ),
        "response_type": string(
            "Answer style for the LLM, e.g. 'Multiple Paragraphs', 'Single Paragraph', 'Bullet Points'.",
            max_length=100,
        ),
        "only_context": boolean("Return the retrieved context without an LLM answer.", default=False),
    },
    required=["query"],
)

SOURCE = obj(
    {
        "document_id": string(max_length=128),
        "filename": string(max_length=512),
        "chunk_id": string(max_length=160),
        "content_preview": string(max_length=2000),
        "relevance_score": nullable(number(minimum=-1.0, maximum=1.0)),
        "positions": nullable(open_object()),
        "metadata": open_object(),
    },
    closed=False,
)

QUERY_RESULT = obj(
    {
        "query": string(max_length=10_000),
        "mode": string(enum=MODES),
        "status": string(enum=["answered", "context_only", "no_results"]),
        "answer": nullable(string(max_length=10_000_000)),
        "context": nullable(string(max_length=10_000_000)),
        "sources": array(SOURCE, max_items=1000),
        "entities": array(open_object(), max_items=1000),
        "relationships": array(open_object(), max_items=2000),
        "metadata": open_object("entities/relations/chunks used, processing_time, token_usage, cache_hit"),
        "notes": array(string(max_length=2000), max_items=20),
    },
    closed=False,
)

QUERY = MethodSpec("query/run", QUERY_PARAMS, QUERY_RESULT)

STREAM_QUERY = MethodSpec("query/stream", QUERY_PARAMS, QUERY_RESULT)

QUERY_SIMPLE = MethodSpec(
    "query/simple",
    obj(
        {
            "query": QUERY_TEXT,
            "max_results": integer("How many passages to return.", minimum=1, maximum=50, default=5),
            "include_sources": boolean("List the source documents of each passage.", default=True),
        },
        required=["query"],
    ),
    QUERY_RESULT,
)
