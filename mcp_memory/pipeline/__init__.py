"""The pipelines: store (validate -> embed -> repository) and recall (plan -> embed -> search -> fuse -> answer -> audit), one module per stage."""
