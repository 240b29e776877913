"""A member served by an OpenAI-compatible server elsewhere: ``openai+http://HOST:PORT/v1#MODEL``.

The model runs on that server (a GPU box, a cluster, a bigger machine); caldrix keeps what
makes the protocol what it is: contexts, exact token counts, constraints, streaming. So:

- the context is rendered here, through the chat template, and every piece is counted by the
  server's own tokenizer endpoint (:mod:`caldrix.engines._remote_servers`); a server without
  one is refused, since nothing is ever estimated;
- a generation is one streamed ``/v1/completions`` request with the rendered prompt (as token
  ids where the server takes them, else as the very text that was counted); text arrives as
  server-sent events and goes out as ``token`` frames;
- ``recomputed_from`` is the server's own report of the prompt tokens it found cached
  (``usage.prompt_tokens_details.cached_tokens``, llama.cpp's ``timings.cache_n``); a server
  that reports none gives 0, and the member's ``remote.reports_cached`` says so;
- a client that leaves, or an unload, shuts the HTTP connection, which cancels the request;
- the member holds no weights or rows here: its footprint is 0.

The API key, when the server wants one, comes from the environment variable the
``api_key_env`` flag names; it is sent in the ``Authorization`` header and nowhere else.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from caldrix.engine_seam import (
    ChatTemplateSource,
    EngineCapabilities,
    GenerationParams,
    GenerationResult,
    GenerationSink,
    ServingFlags,
)
from caldrix.engines._http import EventStream, HttpClient, Origin, Refused, Unreachable
from caldrix.engines._remote_servers import ServerKind, probe_kind
from caldrix.engines._remote_stream import RemoteGeneration
from caldrix.errors import ContextOverflow, InternalError, ModelNotFound, PrecheckFailed, quoted

logger = logging.getLogger("caldrix.pool")

REMOTE_FORM: Final = "openai+http://HOST:PORT/v1#MODEL"
#: The window assumed when neither the server nor the ``ctx`` flag gives one: the default
#: ``n_ctx`` of llama-cpp-python's server, the smallest of the servers known here.
UNREPORTED_WINDOW: Final = 2048
#: Texts whose tokens are remembered per member (rendering asks for the same markup often).
TOKENIZE_CACHE_ENTRIES: Final = 4096


@dataclass(frozen=True)
class RemoteReference:
    """``openai+http(s)://HOST:PORT/PATH#MODEL``, parsed."""

    text: str
    api: Origin
    """The OpenAI API's base, ``http(s)://HOST:PORT/v1``."""
    model: str

    @property
    def url(self) -> str:
        return self.api.url

    @property
    def root(self) -> Origin:
        """The server's root: the API base without its trailing ``/v1``, where tokenizer
        endpoints live."""
        path = self.api.path.removesuffix("/v1")
        return Origin(self.api.scheme, self.api.host, self.api.port, path)


def parse_remote_reference(text: str) -> RemoteReference:
    address, _, model = text.partition("#")
    if not model:
        raise ModelNotFound(
            f"{quoted(text)} names no model: write {REMOTE_FORM} (MODEL as the server's /v1/models lists it)",
            reference=text,
        )
    try:
        api = Origin.from_url(address.removeprefix("openai+"))
    except ValueError as exc:
        raise ModelNotFound(f"{quoted(text)} is not of the form {REMOTE_FORM}", reference=text) from exc
    return RemoteReference(text=text, api=api, model=model)


def open_remote(reference: str, flags: ServingFlags) -> RemoteModel:
    """Check that the server answers and serves the model, find its tokenizer, and return
    the member's model; :class:`PrecheckFailed` in one line naming the URL otherwise."""
    parsed = parse_remote_reference(reference)
    headers = _auth_headers(flags.api_key_env)
    api = HttpClient(parsed.api, headers)
    root = HttpClient(parsed.root, headers)
    served = _served_models(api, parsed)
    if parsed.model not in served:
        listed = ", ".join(served) or "no model"
        raise PrecheckFailed(f"{parsed.url} serves {listed}, not {quoted(parsed.model)}", reference=reference)
    found = probe_kind(root, parsed.model)
    if found is None:
        raise PrecheckFailed(
            f"{parsed.url} serves {quoted(parsed.model)} but has no tokenizer endpoint (/extras/tokenize or "
            "/tokenize): caldrix counts every context with the model's own tokenizer and never "
            "estimates, so it cannot serve this model",
            reference=reference,
        )
    kind, added = found
    props = _llama_server_props(root) if kind.name == "llama.cpp server" else {}
    window = _window(props, flags.ctx)
    template = _template(props, flags.chat_template)
    model = RemoteModel(parsed, kind, api, root, window, template, tuple(added))
    logger.info(
        "remote member on %s (%s): model %s, window %d, constraints %s",
        parsed.url,
        kind.name,
        parsed.model,
        window,
        ", ".join(kind.constraints) or "none",
    )
    return model


class RemoteModel:
    """A member whose model runs on an OpenAI-compatible server (see the module docstring)."""

    def __init__(
        self,
        reference: RemoteReference,
        kind: ServerKind,
        api: HttpClient,
        root: HttpClient,
        n_ctx: int,
        template: ChatTemplateSource,
        added_tokens: tuple[int, ...],
    ) -> None:
        self.reference = reference
        self.kind = kind
        self.capabilities = EngineCapabilities(constraints=kind.constraints, snapshots=False)
        self._api = api
        self._root = root
        self._n_ctx = n_ctx
        self._template = template
        self._added = added_tokens
        self._tokens: OrderedDict[str, list[int]] = OrderedDict()
        self._tokens_lock = threading.Lock()
        self._warned_count = False

    @property
    def n_ctx(self) -> int:
        return self._n_ctx

    @property
    def threads(self) -> int | None:
        return None

    @property
    def chat_template(self) -> ChatTemplateSource:
        return self._template

    @property
    def footprint_bytes(self) -> int | None:
        return 0  # the weights and rows live on the server

    @property
    def url(self) -> str:
        """The server's OpenAI API base, ``http(s)://HOST:PORT/v1``."""
        return self.reference.url

    def describe(self) -> dict[str, Any]:
        """The member object's added ``remote`` field."""
        return {
            "url": self.reference.url,
            "server": self.kind.name,
            "model": self.reference.model,
            "reports_cached": self.kind.reports_cached,
        }

    def tokenize(self, text: str, *, special: bool = True) -> list[int]:
        """The server's tokens for ``text``. A server whose tokenizer always parses special
        tokens gives the same either way — and parses the prompt the same way, so what is
        counted is what it evaluates."""
        key = text if self.kind.parses_special_only else f"{int(special)}{text}"
        with self._tokens_lock:
            cached = self._tokens.get(key)
            if cached is not None:
                self._tokens.move_to_end(key)
                return list(cached)
        try:
            reply = self._root.post(
                self.kind.tokenize_path, self.kind.tokenize_body(self.reference.model, text, special)
            )
        except (Refused, Unreachable) as exc:
            raise InternalError(f"the tokenizer of {self.reference.url} failed: {exc}") from exc
        tokens = reply.get("tokens") if isinstance(reply, dict) else None
        if not isinstance(tokens, list):
            raise InternalError(f"the tokenizer of {self.reference.url} answered without tokens")
        if self._added and tokens[: len(self._added)] == list(self._added):
            tokens = tokens[len(self._added) :]
        with self._tokens_lock:
            self._tokens[key] = tokens
            while len(self._tokens) > TOKENIZE_CACHE_ENTRIES:
                self._tokens.popitem(last=False)
        return list(tokens)

    def stream_generation(
        self,
        prompt_tokens: Sequence[int],
        params: GenerationParams,
        sink: GenerationSink,
        *,
        prompt_text: str | None = None,
    ) -> GenerationResult:
        """One streamed completion; see the module docstring. ``prompt_text`` is the rendered
        prompt, needed by a server that takes text prompts."""
        if len(prompt_tokens) + params.max_new_tokens > self._n_ctx:
            raise ContextOverflow(
                f"the prompt ({len(prompt_tokens)} tokens) plus max_new_tokens ({params.max_new_tokens}) "
                f"exceeds the window of {self._n_ctx} tokens"
            )
        body = self._request_body(prompt_tokens, params, prompt_text)
        generation = RemoteGeneration(self, list(prompt_tokens), params, sink)
        result = generation.run(body)
        self._check_count(generation.server_prompt_tokens, len(prompt_tokens))
        return result

    def count_text(self, text: str) -> int:
        """Tokens of generated ``text`` when the server reported no completion count."""
        return len(self.tokenize(text, special=False)) if text else 0

    def stream(self, body: dict[str, Any]) -> EventStream:
        return self._api.stream("/completions", body)

    def close(self) -> None:
        self._api.close()
        self._root.close()

    def _request_body(
        self, prompt_tokens: Sequence[int], params: GenerationParams, prompt_text: str | None
    ) -> dict[str, Any]:
        if self.kind.token_prompts:
            prompt: str | list[int] = [*self._added, *prompt_tokens]
        elif prompt_text is not None:
            prompt = prompt_text
        else:
            raise InternalError(f"{self.kind.name} takes text prompts and none was given")
        body: dict[str, Any] = {
            "model": self.reference.model,
            "prompt": prompt,
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "stream": True,
            **self.kind.sampling_fields(),
            **self.kind.constraint_fields(params.constraint),
        }
        if self.kind.reports_cached:
            body["stream_options"] = {"include_usage": True}
        if params.top_p < 1.0:
            body["top_p"] = params.top_p
        if params.top_k > 0 and "top_k" in body:  # a server that has top-k at all
            body["top_k"] = params.top_k
        if params.seed is not None:
            body["seed"] = params.seed
        if params.stop:
            body["stop"] = list(params.stop)
        if params.logprobs > 0:
            body["logprobs"] = params.logprobs
        return body

    def _check_count(self, server_count: int | None, ours: int) -> None:
        """The server's prompt count should be ours plus what its tokenizer adds; say once if
        it is not (a template or tokenizer mismatch the counts would hide)."""
        expected = ours + len(self._added)
        if server_count is not None and server_count != expected and not self._warned_count:
            self._warned_count = True
            logger.warning(
                "%s counted %d prompt tokens where caldrix counted %d: the counts may be off",
                self.reference.url,
                server_count,
                expected,
            )


def _auth_headers(env_name: str | None) -> dict[str, str]:
    if env_name is None:
        return {}
    key = os.environ.get(env_name)
    if not key:
        raise PrecheckFailed(f"the api_key_env flag names {env_name}, which is not set in the environment")
    return {"Authorization": f"Bearer {key}"}


def _served_models(api: HttpClient, parsed: RemoteReference) -> list[str]:
    try:
        reply = api.get("/models")
    except Unreachable as exc:
        raise PrecheckFailed(f"nothing answered at {parsed.url} ({exc})", reference=parsed.text) from exc
    except Refused as exc:
        raise PrecheckFailed(f"{parsed.url}/models answered {exc}", reference=parsed.text) from exc
    data = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(data, list):
        raise PrecheckFailed(
            f"{parsed.url}/models answered something that is not an OpenAI model list", reference=parsed.text
        )
    return [str(entry.get("id")) for entry in data if isinstance(entry, dict)]


def _llama_server_props(root: HttpClient) -> dict[str, Any]:
    try:
        props = root.get("/props")
    except (Refused, Unreachable):
        return {}
    return props if isinstance(props, dict) else {}


def _window(props: dict[str, Any], flag: int | None) -> int:
    settings = props.get("default_generation_settings")
    reported = settings.get("n_ctx") if isinstance(settings, dict) else None
    if isinstance(reported, int) and reported > 0:
        return min(reported, flag) if flag else reported
    return flag or UNREPORTED_WINDOW


def _template(props: dict[str, Any], flag: str | None) -> ChatTemplateSource:
    from caldrix.generation.templates import template_source_for

    served = props.get("chat_template")
    if not flag and isinstance(served, str) and served:
        bos, eos = str(props.get("bos_token", "")), str(props.get("eos_token", ""))
        return ChatTemplateSource(source=served, bos_token=bos, eos_token=eos)
    return ChatTemplateSource(source=template_source_for(flag, None))
