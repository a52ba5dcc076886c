"""Retrieval evaluations for mcp-memory.

Modules:
    locomo_data: load LoCoMo (Maharana et al., ACL 2024) and clean its evidence ids.
    metrics: evidence recall@k, hit@k and reciprocal rank, and their means per category.
    retrievers: the ``Retriever`` protocol and the BM25 baseline.
    mcp_retriever: mcp-memory reached through its MCP tools (in process or over HTTP).
    report: the terminal table, the JSON report and its markdown twin.
    locomo: the command line, ``python -m evals.locomo``.

The data sets are not shipped with the repository; see ``evals/README.md``.
"""
