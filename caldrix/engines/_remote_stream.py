"""One streamed completion on a remote member's server, from request to ``done``.

A watcher thread runs beside the engine thread's blocked read: once a second it checks whether
the generation was cancelled (its client left, its member is unloading) and, if so, shuts the
HTTP connection, which ends the read and, on the server, the request; until the first text
arrives it also sends ``progress`` with nothing done, so the client's wait between frames
covers a long prefill on the server.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Final, Protocol

from caldrix.engine_seam import (
    Finish,
    GenerationCancelled,
    GenerationParams,
    GenerationResult,
    GenerationSink,
)
from caldrix.engines._http import EventStream, Refused, Unreachable, stream_error_text
from caldrix.errors import BadRequest, InternalError
from caldrix.generation.degeneration import DegenerationGuard

#: How often a waiting generation checks for a cancel and, before its first text, sends
#: ``progress`` (the protocol's once a second).
WATCH_INTERVAL_SECS: Final = 1.0


class CompletionsServer(Protocol):
    """What a generation needs of its remote member (an
    :class:`~caldrix.engines.openai_remote.RemoteModel`): its address, to name it in errors; one
    streamed completion; and the count of a text, when the server reports none."""

    @property
    def url(self) -> str: ...

    def stream(self, body: dict[str, Any]) -> EventStream: ...

    def count_text(self, text: str) -> int: ...


class RemoteGeneration:
    """The state of one remote generation while it streams."""

    def __init__(
        self, model: CompletionsServer, prompt: list[int], params: GenerationParams, sink: GenerationSink
    ) -> None:
        self._model = model
        self._prompt = prompt
        self._params = params
        self._sink = sink
        self._json = params.constraint is not None and "json" in params.constraint
        self._text: list[str] = []
        self._held = ""
        self._logprobs: list[dict[str, object]] | None = [] if params.logprobs > 0 else None
        self._finish: Finish | None = None
        self._guard = DegenerationGuard(params.guard) if params.guard is not None else None
        self._degenerate: str | None = None
        self._usage: dict[str, Any] = {}
        self._cache_n: int | None = None
        self._server_error: object = None
        """The error the server sent inside the stream, if it sent one (then it ends it)."""
        self._first_text = threading.Event()
        self._done = threading.Event()
        self.server_prompt_tokens: int | None = None

    def run(self, body: dict[str, Any]) -> GenerationResult:
        url = self._model.url
        started = time.perf_counter()
        self._sink.progress(0, len(self._prompt))
        if self._params.max_new_tokens == 0:
            return self._result(started, started)  # servers read max_tokens 0 as "no limit"
        stream: list[EventStream] = []
        threading.Thread(target=self._watch, args=(stream,), name="caldrix-remote-watch", daemon=True).start()
        first: float | None = None
        try:
            if self._sink.cancelled():
                raise GenerationCancelled(self._partial())
            opened = self._model.stream(body)
            stream.append(opened)
            for event in opened:
                if first is None:
                    first = time.perf_counter()
                self._take(event)
                if self._server_error is not None:
                    break
                if self._degenerate is not None:
                    self._finish = "degenerate"
                    break
            if self._sink.cancelled():
                raise GenerationCancelled(self._partial())
            if self._server_error is not None:
                raise _stream_failure(url, self._server_error)
            if not opened.finished and self._finish is None:
                raise InternalError(
                    f"the server at {url} closed the stream after {len(self._text)} piece(s) of text"
                )
        except (Unreachable, Refused) as exc:
            if self._sink.cancelled():
                raise GenerationCancelled(self._partial()) from None
            if isinstance(exc, Refused) and exc.status == 400:
                raise BadRequest(f"the server at {url} refused this generation: {exc.body}") from exc
            raise InternalError(f"the server at {url} failed this generation: {exc}") from exc
        finally:
            self._done.set()
            for opened in stream:
                opened.close()
        return self._result(started, first if first is not None else time.perf_counter())

    def _take(self, event: dict[str, Any]) -> None:
        if "error" in event:
            self._server_error = event["error"]
            return
        usage = event.get("usage")
        if isinstance(usage, dict):
            self._usage = usage
        timings = event.get("timings")
        if isinstance(timings, dict) and isinstance(timings.get("cache_n"), int):
            self._cache_n = timings["cache_n"]
        choices = event.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return
        choice = choices[0]
        text = choice.get("text")
        if isinstance(text, str) and text:
            self._emit(text)
        if self._logprobs is not None:
            self._logprobs.extend(_logprob_entries(choice.get("logprobs")))
        reason = choice.get("finish_reason")
        if reason is not None:
            self._finish = "length" if reason == "length" else "stop"

    def _emit(self, text: str) -> None:
        """Send text on; under a JSON constraint whitespace is held back until more text
        follows, so the space the grammar allows after the value never reaches the client."""
        self._first_text.set()
        if self._json:
            text = self._held + text
            stripped = text.rstrip()
            self._held = text[len(stripped) :]
            text = stripped
        if text:
            self._text.append(text)
            self._sink.token(text)
            if self._guard is not None and self._degenerate is None:
                # The server's pieces stand for tokens: it sends one per token it decodes.
                self._degenerate = self._guard.feed(text, text)

    def _watch(self, stream: list[EventStream]) -> None:
        while not self._done.wait(WATCH_INTERVAL_SECS):
            if self._sink.cancelled():
                for opened in stream:
                    opened.interrupt()
            elif not self._first_text.is_set():
                self._sink.progress(0, len(self._prompt))

    def _result(self, started: float, first: float) -> GenerationResult:
        text = "".join(self._text)
        prompt_tokens = len(self._prompt)
        reported = self._usage.get("completion_tokens")
        completion = reported if isinstance(reported, int) else self._model.count_text(text)
        server_prompt = self._usage.get("prompt_tokens")
        self.server_prompt_tokens = server_prompt if isinstance(server_prompt, int) else None
        cached = _cached_tokens(self._usage, self._cache_n)
        return GenerationResult(
            text=text,
            finish=self._finish or "stop",
            prompt_tokens=prompt_tokens,
            completion_tokens=completion,
            recomputed_from=min(cached, prompt_tokens) if cached is not None else 0,
            output_token_ids=[],
            prefill_ms=(first - started) * 1000.0,
            decode_ms=(time.perf_counter() - first) * 1000.0,
            logprobs=self._logprobs,
            reason=self._degenerate,
        )

    def _partial(self) -> GenerationResult:
        text = "".join(self._text)
        return GenerationResult(
            text=text,
            finish="stop",
            prompt_tokens=len(self._prompt),
            completion_tokens=0,
            recomputed_from=0,
            output_token_ids=[],
            logprobs=self._logprobs,
        )


def _stream_failure(url: str, error: object) -> BadRequest | InternalError:
    """The server's own reason for a stream it ended with an error: a request it refused
    (status 400, e.g. a grammar it cannot parse) is the client's to fix, anything else its own."""
    line = f"the server at {url} ended the stream with an error: {stream_error_text(error)}"
    if isinstance(error, dict) and error.get("code") == 400:
        return BadRequest(line)
    return InternalError(line)


def _cached_tokens(usage: dict[str, Any], cache_n: int | None) -> int | None:
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
        return int(details["cached_tokens"])
    return cache_n


def _logprob_entries(logprobs: object) -> list[dict[str, object]]:
    """The completions API's logprobs (parallel lists) as the protocol's entries."""
    if not isinstance(logprobs, dict):
        return []
    tokens = logprobs.get("tokens") or []
    values = logprobs.get("token_logprobs") or []
    tops = logprobs.get("top_logprobs") or []
    entries: list[dict[str, object]] = []
    for index, token in enumerate(tokens):
        value = values[index] if index < len(values) else None
        top = tops[index] if index < len(tops) and isinstance(tops[index], dict) else {}
        ranked = sorted(top.items(), key=lambda item: item[1], reverse=True)
        entries.append(
            {
                "token": str(token),
                "logprob": float(value) if isinstance(value, int | float) else 0.0,
                "top": [{"token": str(t), "logprob": float(lp)} for t, lp in ranked],
            }
        )
    return entries
