"""mcp-memory: long-term memory for LLM agents over the Model Context Protocol."""

__version__ = "0.1.0"

from mcp_memory.server import build_server  # noqa: E402 - after __version__, which server imports
from mcp_memory.settings import Settings  # noqa: E402

__all__ = ["Settings", "__version__", "build_server"]
