"""Chat-template rendering and per-segment token counts.

A context is a list of segments (``{id, role, text, pinned}``). Its prompt is the model's own
chat template rendered over the segments as messages, plus the generation prompt. The pool
reports how many tokens each segment adds, and the prefix store keys KV snapshots by token ids,
so the tokens of a segment must not change when later segments are appended.

Both follow from one rule: the tokens of segment *i* are the tokenization of the text that
rendering the first *i* segments adds to the rendering of the first *i - 1*. That text depends
on nothing after segment *i*. A template that adds a default system message when the first
message is not a system one (SmolLM2's does) adds it in the first render, so it is counted in
the first segment.

Only the template's own markup may produce special tokens: a segment's text is tokenized as
plain text, whatever it spells (see :mod:`caldrix.generation._segment_tokens`).
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import jinja2

from caldrix.errors import BadRequest
from caldrix.generation._segment_tokens import SegmentTokenizer

if TYPE_CHECKING:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from caldrix.engine_seam import ChatTemplateSource, ServedModel

#: ChatML, the template of files that carry none (and of the known name ``chatml``).
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
#: Templates a serving flag may name instead of giving Jinja source.
KNOWN_TEMPLATES: dict[str, str] = {"chatml": CHATML_TEMPLATE}
#: Segment renderings remembered per engine (token lists keyed by the segments before them).
RENDER_CACHE_ENTRIES = 8192


#: A segment as a map, ``{"id", "role", "text", "pinned"}``: rendering reads its role and text.
SegmentMap = Mapping[str, Any]


def template_source_for(flag: str | None, embedded: str | None) -> str:
    """The Jinja source to render with: the ``chat_template`` flag (a known name or Jinja
    source), else the file's own template, else ChatML."""
    if flag:
        known = KNOWN_TEMPLATES.get(flag.strip().lower())
        if known is not None:
            return known
        if "{" not in flag:
            names = ", ".join(sorted(KNOWN_TEMPLATES))
            raise BadRequest(f"unknown chat template name {flag!r}; use one of {names} or Jinja source")
        return flag
    return embedded or CHATML_TEMPLATE


@dataclass(frozen=True)
class _Rendered:
    """One segment's (or the generation prompt's) rendered text and its tokens."""

    tokens: list[int]
    text: str


@dataclass(frozen=True)
class RenderedContext:
    """A context rendered for one engine."""

    segment_ids: list[str]
    segment_tokens: list[list[int]]
    """The tokens each segment adds, role markers (and any injected default message) included."""
    generation_prompt: list[int]
    """The tokens after the last segment that open the assistant's reply."""
    segment_texts: list[str] = field(default_factory=list)
    """The rendered text each segment adds (what its tokens are the tokens of)."""
    generation_text: str = ""
    """The rendered text of the generation prompt."""
    prompt_tokens: list[int] = field(init=False)
    """Every segment's tokens, then the generation prompt: what a generation evaluates."""

    def __post_init__(self) -> None:
        prompt = [t for tokens in self.segment_tokens for t in tokens]
        prompt.extend(self.generation_prompt)
        object.__setattr__(self, "prompt_tokens", prompt)

    @property
    def counts(self) -> list[dict[str, object]]:
        """Segment counts as the protocol sends them: ``[{"id": ..., "tokens": ...}]``."""
        return [
            {"id": sid, "tokens": len(tokens)}
            for sid, tokens in zip(self.segment_ids, self.segment_tokens, strict=True)
        ]

    @property
    def tokens(self) -> int:
        """The rendered length: every segment plus the generation prompt."""
        return len(self.prompt_tokens)

    @property
    def prompt_text(self) -> str:
        """The rendered prompt as text, for a member that is sent text rather than tokens
        (a remote server that tokenizes its prompt itself, as its tokenizer endpoint does)."""
        return "".join(self.segment_texts) + self.generation_text


def render_context(engine: ServedModel, segments: Sequence[SegmentMap]) -> RenderedContext:
    """Render ``segments`` through ``engine``'s chat template; see the module docstring."""
    return _renderer_for(engine).render(segments)


class SegmentRenderer:
    """Renders contexts for one engine, remembering each segment's tokens by the exact
    segments before it, so appending to a long context renders only the new part."""

    def __init__(self, engine: ServedModel) -> None:
        self._engine = engine
        template = engine.chat_template
        self._plain = _formatter(template, add_generation_prompt=False)
        self._opening = _formatter(template, add_generation_prompt=True)
        self._tokenizer = SegmentTokenizer(engine)
        self._cache: OrderedDict[bytes, _Rendered] = OrderedDict()
        self._lock = threading.Lock()

    def render(self, segments: Sequence[SegmentMap]) -> RenderedContext:
        messages = [_message(segment) for segment in segments]
        keys = _prefix_keys(messages)
        rendered: list[_Rendered | None] = [self._cached(key) for key in keys]
        first_missing = next((i for i, r in enumerate(rendered) if r is None), len(messages))
        previous = self._render(messages[:first_missing]) if first_missing < len(messages) else ""
        for i in range(first_missing, len(messages)):
            current = self._render(messages[: i + 1])
            if rendered[i] is None:
                tokens = self._segment_tokens(messages[: i + 1], previous, current)
                piece = _Rendered(tokens, _added_text(previous, current))
                rendered[i] = piece
                self._store(keys[i], piece)
            previous = current
        generation_key = b"gen:" + (keys[-1] if keys else b"")
        opening = self._cached(generation_key)
        if opening is None:
            full = self._render(messages)
            opening_text = _added_text(full, self._render(messages, opening=True))
            # The template's alone, so special tokens are parsed.
            opening = _Rendered(self._engine.tokenize(opening_text, special=True), opening_text)
            self._store(generation_key, opening)
        done = [r for r in rendered if r is not None]
        return RenderedContext(
            segment_ids=[_segment_id(segment) for segment in segments],
            segment_tokens=[list(r.tokens) for r in done],
            generation_prompt=list(opening.tokens),
            segment_texts=[r.text for r in done],
            generation_text=opening.text,
        )

    def _segment_tokens(self, messages: list[dict[str, str]], previous: str, current: str) -> list[int]:
        """The tokens the last of ``messages`` adds: its markup with special tokens parsed,
        its content as plain text (rendered once more with a sentinel to tell them apart)."""
        content = messages[-1]["content"]
        sentinel = self._tokenizer.sentinel_for(content)
        try:
            outline: str | None = _added_text(
                previous, self._render([*messages[:-1], {**messages[-1], "content": sentinel}])
            )
        except BadRequest:
            outline = None  # a template that inspects the content; the tokenizer falls back
        return self._tokenizer.tokenize(_added_text(previous, current), content, outline, sentinel)

    def _render(self, messages: list[dict[str, str]], *, opening: bool = False) -> str:
        if not messages and not opening:
            return ""  # many templates read messages[0] unconditionally; nothing renders as nothing
        formatter = self._opening if opening else self._plain
        try:
            return str(formatter(messages=cast(Any, messages)).prompt)
        except (jinja2.TemplateError, ValueError, TypeError) as exc:
            raise BadRequest(f"the model's chat template refused these segments: {exc}") from exc

    def _cached(self, key: bytes) -> _Rendered | None:
        with self._lock:
            rendered = self._cache.get(key)
            if rendered is not None:
                self._cache.move_to_end(key)
            return rendered

    def _store(self, key: bytes, rendered: _Rendered) -> None:
        with self._lock:
            self._cache[key] = rendered
            while len(self._cache) > RENDER_CACHE_ENTRIES:
                self._cache.popitem(last=False)


_renderers: weakref.WeakKeyDictionary[Any, SegmentRenderer] = weakref.WeakKeyDictionary()
_renderers_lock = threading.Lock()


def _renderer_for(engine: ServedModel) -> SegmentRenderer:
    with _renderers_lock:
        renderer = _renderers.get(engine)
        if renderer is None:
            renderer = SegmentRenderer(engine)
            _renderers[engine] = renderer
        return renderer


def _formatter(template: ChatTemplateSource, *, add_generation_prompt: bool) -> Jinja2ChatFormatter:
    # Imported here: llama_cpp takes half a second to load, and only a render needs it.
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    try:
        return Jinja2ChatFormatter(
            template=template.source,
            eos_token=template.eos_token,
            bos_token=template.bos_token,
            add_generation_prompt=add_generation_prompt,
        )
    except jinja2.TemplateError as exc:
        raise BadRequest(f"the chat template does not parse: {exc}") from exc


def _added_text(before: str, after: str) -> str:
    """The text ``after`` adds to ``before``. Chat templates render a prefix of the messages
    as a prefix of the text; when one does not, the common part is kept and the rest counts
    as added, so earlier segments keep their tokens."""
    if after.startswith(before):
        return after[len(before) :]
    common = 0
    for a, b in zip(before, after, strict=False):
        if a != b:
            break
        common += 1
    return after[common:]


def _prefix_keys(messages: list[dict[str, str]]) -> list[bytes]:
    """Key *i* names the exact roles and texts of messages 0..i (a digest chain)."""
    keys: list[bytes] = []
    digest = b""
    for message in messages:
        h = hashlib.blake2b(digest, digest_size=20)
        h.update(message["role"].encode())
        h.update(b"\0")
        h.update(message["content"].encode("utf-8", "surrogatepass"))
        digest = h.digest()
        keys.append(digest)
    return keys


def _message(segment: SegmentMap) -> dict[str, str]:
    return {"role": str(segment["role"]), "content": str(segment["text"])}


def _segment_id(segment: SegmentMap) -> str:
    return str(segment.get("id", ""))
