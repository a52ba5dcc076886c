"""The streamable HTTP transport: building and serving the Starlette app."""
