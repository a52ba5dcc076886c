"""Run ``llama_cpp.server`` without ggml's extra buffer types: ``python launch.py <server flags>``.

Run by the eval-llm interpreter as a file (it imports nothing of this repository). ggml repacks
weights into "extra buffer types" for its AMX and AVX2 matrix kernels; on a virtual machine whose
CPU reports AMX (Sapphire Rapids and later) the AMX kernel crashes the server with SIGSEGV on the
first request (llama-cpp-python 0.3.36 built with ``-DGGML_NATIVE=ON``, seen here). The server has
no flag for ``llama_model_params.use_extra_bufts``, so this sets it to false in the defaults every
model is loaded with, then starts the server as ``python -m llama_cpp.server`` would.
"""

import sys

import llama_cpp.llama_cpp as bindings

_defaults = bindings.llama_model_default_params


def _without_extra_buffer_types():  # type: ignore[no-untyped-def]
    params = _defaults()
    params.use_extra_bufts = False
    return params


bindings.llama_model_default_params = _without_extra_buffer_types

if __name__ == "__main__":
    from llama_cpp.server.__main__ import main

    sys.argv[0] = "llama_cpp.server"
    sys.exit(main())
