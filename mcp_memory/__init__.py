"""mcp-memory: long-term memory for LLM agents over the Model Context Protocol."""

import os

# Nothing leaves the machine unless a setting names an endpoint (docs/privacy.md). ONNX Runtime 1.32
# sends telemetry (to mobile.events.data.microsoft.com, about 9 s after an InferenceSession is created)
# unless ORT_DISABLE_TELEMETRY is set before the session; onnxruntime.disable_telemetry_events() does not
# stop it. Set here, before anything imports onnxruntime, fastembed or huggingface_hub: every process we
# start imports this package first (the mcp-memory command, the quantization child of
# embedding/offline_model.py) and their children inherit it. An operator's own value is kept.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

__version__ = "0.1.0"

from mcp_memory.server import build_server  # noqa: E402 - after __version__, which server imports
from mcp_memory.settings import Settings  # noqa: E402

__all__ = ["Settings", "__version__", "build_server"]
