"""Memories out of and into the database: ``mcp-memory export`` and ``mcp-memory import``."""
