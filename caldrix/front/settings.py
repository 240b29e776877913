"""``caldrix serve``'s settings and bounds, each named once, here.

docs/http-front.md says what each one is for; the command line (:mod:`caldrix.cli.serve`)
fills :class:`FrontSettings` from its flags.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, get_args

from caldrix.protocol.roles import MAIN_MEMBER

#: Where the front listens unless ``--host`` / ``--port`` say otherwise: this machine only.
DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8739
#: Hosts that reach this machine only; any other ``--host`` needs ``--api-key``.
LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "::1", "localhost"})
#: The environment variable ``--api-key`` may be given in instead (a flag shows in ``ps``).
API_KEY_ENV: Final = "CALDRIX_SERVE_API_KEY"

#: Output tokens one generation may decode, unless ``--max-output-tokens`` says otherwise for
#: its member: Claude Code asks 32,000, which a small model that never stops turns into a
#: quarter hour of noise. A reply cut here ends as ``end_turn`` (docs/http-front.md).
DEFAULT_MAX_OUTPUT_TOKENS: Final = 2048
#: How a request's tools are written into its prompt: ``full`` (each tool's description and
#: parameter schema as sent) or ``brief`` (the description's first paragraph, the parameters'
#: shape without their words: caldrix/front/tool_text.py). Either way a call is constrained to
#: the full schema. ``--tool-text [MEMBER=]MODE`` changes it.
ToolText = Literal["full", "brief"]
TOOL_TEXTS: Final[tuple[ToolText, ...]] = get_args(ToolText)
DEFAULT_TOOL_TEXT: Final[ToolText] = "full"
#: What ``caldrix launch claude`` asks of the front it starts, unless a ``--serve-flag`` names
#: ``--tool-text``: its default member is a 135M model, for which Claude Code's tool prose (two
#: thirds of its prompt) is minutes of prefill and little use.
LAUNCH_TOOL_TEXT: Final[ToolText] = "brief"
#: Rows a prompt must leave free in its member's window: a prompt that leaves fewer is "too
#: long" (Anthropic's 400, which makes Claude Code compact), not an answer of a few tokens.
MIN_ROOM_TOKENS: Final = 256
#: The largest request body read; a longer one is 413 before it is read further.
MAX_BODY_BYTES: Final = 32 * 1024 * 1024
#: How long a client may take to send its whole body (a slow client holds nothing longer).
BODY_SECS: Final = 60.0
#: How long a connection may take to send a request's head, on a new connection or between
#: two requests on one: a client that trickles bytes does not hold a connection longer.
REQUEST_HEAD_SECS: Final = 10.0
#: An SSE ``ping`` goes out this often while a reply streams, whether it is queued, prefilling
#: or decoding (Anthropic's clients expect one at least every 5 s while nothing else comes);
#: ``--ping-interval`` changes it.
PING_SECS: Final = 3.0
#: How long a generation goes on after its client left, waiting for the same request to come
#: again (caldrix/front/resend.py); ``--resend-grace`` changes it, 0 cancels at once. Claude
#: Code sends a request again within a second of giving up on it the first time, and its later
#: retries back off, doubling (18 s was the longest seen: docs/http-front.md, "A resend takes
#: over the generation it resends"); a minute covers them, while a generation nobody comes back
#: for holds its member a minute at most.
RESEND_GRACE_SECS: Final = 60.0
#: The longest ``--resend-grace`` taken: past it, a generation nobody comes back for holds its
#: member longer than any client waits for an answer.
MAX_RESEND_GRACE_SECS: Final = 3600.0
#: Generations nobody follows that are kept for a resend (running, or their answers whole);
#: past this many the oldest goes. Each holds at most one reply's text and a pool connection.
MAX_KEPT_GENERATIONS: Final = 8
#: HTTP connections served at once; more are answered 503 at once.
MAX_CONNECTIONS: Final = 64
#: System blocks that are per-request headers rather than instructions, by how they start:
#: Claude Code's first block carries a nonce that changes every request, so keeping it would
#: make every prompt new from its first token. They are dropped before rendering.
HEADER_BLOCK_PREFIXES: Final = ("x-anthropic-billing-header:",)
#: How long the front waits for the pool: each control request, the gap between two frames
#: of a generation (the pool sends progress at least every 30 s while queued), a load.
POOL_CONTROL_SECS: Final = 30.0
POOL_FRAME_GAP_SECS: Final = 600.0
POOL_LOAD_SECS: Final = 900.0
#: How long ``serve`` and ``launch`` wait for a pool they started to answer.
POOL_START_SECS: Final = 300.0
#: What ``caldrix launch`` loads when it starts a pool and is not told otherwise: the small
#: embedded model, the tests' model (aerix's default, qwen2.5-coder-1.5b, is eleven times its
#: size and prefills several times more slowly on a CPU; ``--load qwen2.5-coder-1.5b`` for real
#: work), with a window that holds Claude Code's prompt (12k to 28k tokens; the model's own 8,192
#: would make every request "too long"), and flash attention: a first request of Claude Code's is
#: thousands of rows, prefilled 1.4x faster with it, which outweighs the slower decoding of its
#: answers (0.74x a token at 6,000 rows) for dozens of requests (docs/benchmarks.md, "Flash
#: attention in the pool").
LAUNCH_MODEL: Final = "smollm2-135m"
LAUNCH_POOL_FLAGS: Final = "--ctx 32768 --flash-attention"


@dataclass(frozen=True)
class ModelRoute:
    """``--model PATTERN=MEMBER``: request model names matching the shell-style ``pattern``
    (``claude-*haiku*``) go to ``member``."""

    pattern: str
    member: str


@dataclass(frozen=True)
class FrontSettings:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    api_key: str | None = None
    socket: Path | None = None
    """The pool's socket; None is the default socket."""
    routes: tuple[ModelRoute, ...] = ()
    default_member: str = MAIN_MEMBER
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    member_max_output: dict[str, int] = field(default_factory=dict)
    """``--max-output-tokens MEMBER=N``: a member's own bound."""
    log_requests: Path | None = None
    max_body_bytes: int = MAX_BODY_BYTES
    max_connections: int = MAX_CONNECTIONS
    ping_secs: float = PING_SECS
    resend_grace_secs: float = RESEND_GRACE_SECS
    tool_text: ToolText = DEFAULT_TOOL_TEXT
    member_tool_text: dict[str, ToolText] = field(default_factory=dict)
    """``--tool-text MEMBER=MODE``: a member's own."""

    def member_for(self, model: str, members: set[str]) -> str:
        """The member a request's ``model`` runs on: the first ``--model`` route whose pattern
        matches, else the member of that name, else ``--default-member`` (``main``)."""
        for route in self.routes:
            if fnmatch.fnmatchcase(model, route.pattern):
                return route.member
        return model if model in members else self.default_member

    def output_bound(self, member: str) -> int:
        return self.member_max_output.get(member, self.max_output_tokens)

    def tool_text_for(self, member: str) -> ToolText:
        return self.member_tool_text.get(member, self.tool_text)
