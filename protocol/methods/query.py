"""Query tool methods: the full query, the simple LibreChat form, and the streamed form."""

from __future__ import annotations

from protocol.context import MAX_KNOWLEDGE_BASE_NAME
from protocol.schema import (
    MethodSpec,
    array,
    boolean,
    integer,
    nullable,
    number,
    obj,
    open_list,
    open_object,
    string,
    without_descriptions,
)

MODES = ["naive", "local", "global", "hybrid", "mix", "bypass"]

QUERY_TEXT = string(max_length=10_000, min_length=1)

QUERY_PARAMS = obj(
    {
        "query": QUERY_TEXT,
        "mode": string(
            "mix: graph+vectors; naive: vectors; local/global/hybrid: graph; bypass: LLM",
            enum=MODES,
            default="mix",
        ),
        "top_k": integer("entities/relations", minimum=1, maximum=200, default=40),
        "chunk_top_k": integer("passages", minimum=1, maximum=100, default=10),
        # Passages scoring below it are dropped; 0 keeps every passage LightRAG retrieved (its own
        # vector search already applies COSINE_THRESHOLD, 0.2 by default).
        "cosine_threshold": number(maximum=1.0, default=0.0),
        "max_tokens": integer("context budget", minimum=1000, maximum=128_000, default=30_000),
        # The built-in reranker puts passages that contain the question's names first (exact_match).
        "enable_rerank": boolean(default=True),
        "history_turns": integer(maximum=20, default=3),
        "conversation_history": array(
            obj(
                {
                    "role": string(enum=["user", "assistant", "system"]),
                    "content": string(max_length=20_000),
                },
                required=["role", "content"],
            ),
            max_items=100,
        ),
        "response_type": string(max_length=100),
        "only_context": boolean("passages, no LLM answer", default=False),
    },
    required=["query"],
)

SOURCE = obj(
    {
        "document_id": string(max_length=128),
        "filename": string(max_length=512),
        "chunk_id": string(max_length=160),
        "content": string("The passage.", max_length=1_000_000),
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
        "sources": array(SOURCE, max_items=1000),
        "entities": open_list("{name, type, description} objects", max_items=1000),
        "relationships": open_list("{source, target, keywords, description} objects", max_items=2000),
        "metadata": open_object("entities/relations/chunks used, processing_time, token_usage, cache_hit"),
        "notes": array(string(max_length=2000), max_items=20),
    },
    closed=False,
)

QUERY = MethodSpec("query/run", QUERY_PARAMS, QUERY_RESULT)

# lightrag_stream_query takes lightrag_query's arguments: its tool description points there.
STREAM_QUERY = MethodSpec("query/stream", without_descriptions(QUERY_PARAMS), QUERY_RESULT)

QUERY_SIMPLE = MethodSpec(
    "query/simple",
    obj(
        {
            "query": QUERY_TEXT,
            "max_results": integer(minimum=1, maximum=50, default=5),
            "include_sources": boolean(default=True),
        },
        required=["query"],
    ),
    QUERY_RESULT,
)

# The second step of a question searched across knowledge bases (SPEC §3 "Search by default"):
# the front merged the passages of the caller's own knowledge base and the shared ones, and the
# worker writes one answer from them in the caller's workspace.  Called by the front, not a tool.
_ASKED = {name: QUERY_PARAMS["properties"][name] for name in ("query", "mode", "history_turns", "conversation_history", "response_type")}
_NAME = nullable(string(max_length=1000))
_TEXT = nullable(string(max_length=10_000))
PASSAGE = obj(
    {"knowledge_base": string(max_length=MAX_KNOWLEDGE_BASE_NAME), "filename": string(max_length=512),
     "content": string(max_length=1_000_000)},
    required=["content"],
)  # fmt: skip
ANSWER_PARAMS = obj(
    {
        **_ASKED,
        "stream": boolean("answer text as progress", default=False),
        "sources": array(PASSAGE, max_items=1000),
        "entities": array(obj({"name": _NAME, "type": _NAME, "description": _TEXT}), max_items=1000),
        "relationships": array(
            obj({"source": _NAME, "target": _NAME, "keywords": _TEXT, "description": _TEXT}), max_items=2000
        ),
    },
    required=["query", "sources"],
)
ANSWER_RESULT = obj(
    {
        "answer": nullable(string("None: no LLM is configured, or it did not answer (see notes)", max_length=10_000_000)),
        "notes": array(string(max_length=2000), max_items=20),
    },
    closed=False,
)
ANSWER = MethodSpec("query/answer", ANSWER_PARAMS, ANSWER_RESULT)

# The methods this area declares (METHODS is built from them) and what it exports to `protocol.methods`.
SPECS = (QUERY, QUERY_SIMPLE, STREAM_QUERY, ANSWER)
__all__ = ["ANSWER", "QUERY", "QUERY_SIMPLE", "STREAM_QUERY"]
