"""Control methods of the worker pipe, and the system tool methods (health, debug)."""

from __future__ import annotations

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
    obj({"pong": boolean(), "pid": integer(maximum=2**31), "uptime_s": number(maximum=1e9)}, closed=False),
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
            "include_detailed": boolean(
                "Include per-component details and configuration summary.", default=False
            ),
            "check_dependencies": boolean(
                "Actively open the caller's knowledge base (storages, embedding model) and time it.",
                default=False,
            ),
        }
    ),
    obj(
        {
            "status": string(enum=["healthy", "degraded", "unhealthy"]),
            "pid": integer(maximum=2**31),
            "uptime_s": number(maximum=1e9),
            "rss_mb": number(maximum=1e7),
            "versions": VERSIONS,
            "workspaces_open": array(string(max_length=128), max_items=10_000),
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
            "action": string(enum=["sleep", "cpu", "print", "crash", "block", "garbage", "echo"]),
            "seconds": number(maximum=3600, default=0),
            "text": string(max_length=10_000_000, default=""),
            "size": integer("Bytes of junk for the garbage action.", maximum=200_000_000, default=0),
        },
        required=["action"],
    ),
    open_object(),
    debug_only=True,
)

# Schemas: filled by the system work package (issue 6, items 6-9).
CLEAR_CACHE = MethodSpec("system/clear_cache", obj({}), open_object())
SYSTEM_STATS = MethodSpec("system/stats", obj({}), open_object())
