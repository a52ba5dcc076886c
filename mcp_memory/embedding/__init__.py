"""Embedding: the embedders, the offline default model and its int8 rewrite, the coalescer that batches concurrent calls, and the in-process copies of sessions' vectors."""
