"""The LLM client (client.py: OpenAI-compatible chat with usage counted per session) and the
structured-output modes it falls back through (formats.py)."""
