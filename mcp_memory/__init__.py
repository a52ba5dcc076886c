"""mcp-memory: long-term memory for LLM agents over the Model Context Protocol."""

from mcp_memory.server import build_server
from mcp_memory.settings import Settings

__all__ = ["Settings", "build_server"]
__version__ = "0.1.0"
