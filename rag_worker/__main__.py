"""Entry point: `python -m rag_worker` (normally started by the front's supervisor)."""

from rag_worker.stdio_guard import claim_protocol_fds

# Must run before anything else is imported: libraries may print at import time.
_FDS = claim_protocol_fds()


def main() -> None:
    from rag_worker.server import run_worker  # only after the protocol pipe is claimed (above)

    run_worker(_FDS)


if __name__ == "__main__":
    main()
