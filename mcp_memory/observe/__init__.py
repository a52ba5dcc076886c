"""Seeing into a running server: Prometheus metrics (metrics.py), log setup (logs.py), and the
one hook every tool call passes through (calls.py)."""
