"""Control methods of the worker pipe, and the system tool methods (health, debug).

`CALL_CONTEXT` is the wire form of `protocol.context.CallContext`."""

from __future__ import annotations

from protocol.context import MAX_KNOWLEDGE_BASE_NAME
from protocol.schema import MethodSpec, array, boolean, integer, number, obj, open_object, string

CALL_CONTEXT = obj(
    {
        "workspace": string(max_length=128, min_length=1),
        "user_id": string(max_length=256),
        "correlation_id": string(max_length=64, min_length=1),
        "progress": boolean("The client asked for progress notifications."),
        "roots": array(
            string(max_length=4096), "The client's MCP roots as local paths (tools that read the disk).", max_items=256
        ),
        "tool": string("The MCP tool name the call came in as (statistics, audit).", max_length=64),
        "knowledge_base": string(
            "The named knowledge base as the caller wrote it (absent: the default).",
            max_length=MAX_KNOWLEDGE_BASE_NAME,
            min_length=1,
        ),
    },
    required=["workspace", "correlation_id"],
)

VERSIONS = obj(
    {
        "worker": string(max_length=32),
        "python": string(max_length=32),
        "lightrag": string(max_length=32),
        "protocol": integer(maximum=1000),
    },
    closed=False,
)

# --- control methods -------------------------------------------------------------

PING = MethodSpec(
    "ping",
    obj({}),
    obj({"pong": boolean(), "pid": integer(maximum=2**31), "uptime_s": number(maximum=1e9), "indexing": boolean()},
        closed=False),
    tool_method=False,
)

STATUS = MethodSpec(
    "worker/status",
    obj({}),
    obj(
        {
            "pid": integer(maximum=2**31),
            "uptime_s": number(maximum=1e9),
            "rss_mb": number(maximum=1e7),
            "versions": VERSIONS,
            "requests_served": integer(maximum=2**62),
            "in_flight": integer(maximum=2**31),
            "threads_busy": integer(maximum=10_000),
            "threads_limit": integer(maximum=10_000),
            "workspaces_open": array(string(max_length=128), max_items=10_000),
        },
        closed=False,
    ),
    tool_method=False,
)

SHUTDOWN = MethodSpec("worker/shutdown", obj({}), obj({}, closed=False), tool_method=False)

READY_PARAMS = obj(
    {
        "pid": integer(maximum=2**31),
        "versions": VERSIONS,
        "methods": array(string(max_length=64), max_items=1000),
        "startup_s": number(maximum=1e6),
    },
    closed=False,
)

# --- tool methods ----------------------------------------------------------------

HEALTH = MethodSpec(
    "system/health",
    obj(
        {
            "include_detailed": boolean(default=False),
            "check_dependencies": boolean("probe and time each", default=False),
        }
    ),
    obj(
        {
            "status": string(enum=["healthy", "degraded", "unhealthy"]),
            "pid": integer(maximum=2**31),
            "uptime_s": number(maximum=1e9),
            "rss_mb": number(maximum=1e7),
            "versions": VERSIONS,
            "workspaces_open": integer("Knowledge bases open in the worker (how many, not whose).", maximum=10**6),
            "components": open_object("Per-component state."),
            "notes": array(string(max_length=2000), max_items=50),
        },
        closed=False,
    ),
)

# Fault-injection methods for the test suite; the worker serves them only when
# LIGHTRAG_MCP_DEBUG_METHODS=1 and the front advertises the debug tool only then.
DEBUG = MethodSpec(
    "debug/run",
    obj(
        {
            "action": string(enum=["sleep", "cpu", "print", "crash", "block", "garbage", "echo", "close_stdout"]),
            "seconds": number(maximum=3600, default=0),
            "text": string(max_length=10_000_000, default=""),
            "size": integer("Bytes of junk for the garbage action.", maximum=200_000_000, default=0),
        },
        required=["action"],
    ),
    open_object(),
    debug_only=True,
    mutates=True,
)

CACHE_TYPES = ["llm", "embedding", "query", "document", "graph", "all"]
CACHE_SIZE = open_object("entries, size_bytes, oldest_entry, newest_entry, scope, note")

CLEAR_CACHE = MethodSpec(
    "system/clear_cache",
    obj(
        {
            "cache_types": array(string(enum=CACHE_TYPES), max_items=6, min_items=1),
        },
        required=["cache_types"],
    ),
    obj(
        {
            "cleared_caches": array(string(max_length=32), max_items=10),
            "cache_sizes_before": open_object("Per cache type: " + CACHE_SIZE["description"]),
            "cache_sizes_after": open_object("Per cache type, after clearing."),
            "kept": open_object("Caches deliberately not cleared, with their sizes and why."),
            "processing_time_s": number(maximum=1e7),
            "warnings": array(string(max_length=1000), max_items=20),
            "message": string(max_length=4000),
        },
        closed=False,
    ),
    mutates=True,
)

STAT_CATEGORIES = ["queries", "documents", "performance", "memory", "storage", "restarts", "audit"]
TIME_RANGES = ["last_hour", "last_day", "last_week", "last_month", "all"]
ISO_TIME = string(max_length=64)

SYSTEM_STATS = MethodSpec(
    "system/stats",
    obj(
        {
            "time_range": {
                "anyOf": [string(enum=TIME_RANGES), obj({"start": ISO_TIME, "end": ISO_TIME})]
            },
            "stat_categories": array(
                string(enum=STAT_CATEGORIES), "default: all but audit", max_items=len(STAT_CATEGORIES)
            ),
            "audit_limit": integer(minimum=1, maximum=500, default=50),
        }
    ),
    obj(
        {
            "time_range": open_object("start and end of the period (ISO, UTC)."),
            "queries": open_object("Query calls: total, by mode, latency percentiles (ms), cache hit rate, errors."),
            "documents": open_object("Documents by status, processed and failed in the period, processing times."),
            "performance": open_object("Per tool: calls, errors, latency percentiles (ms); throughput."),
            "memory": open_object("RSS of the front and worker processes (MB)."),
            "storage": open_object("Bytes used by your knowledge base's files."),
            "restarts": open_object("Worker restarts and recycles since the server started."),
            "audit": open_object("entries (newest first): time, user, tool, arguments summary, result, correlation_id."),
            "notes": array(string(max_length=2000), max_items=20),
            "message": string(max_length=4000),
        },
        closed=False,
    ),
)

# The methods this area declares (METHODS is built from them) and what it exports to `protocol.methods`.
SPECS = (PING, STATUS, SHUTDOWN, HEALTH, DEBUG, CLEAR_CACHE, SYSTEM_STATS)
__all__ = ["PING", "STATUS", "SHUTDOWN", "HEALTH", "DEBUG", "CLEAR_CACHE", "SYSTEM_STATS", "CALL_CONTEXT", "READY_PARAMS", "VERSIONS"]
