"""Every bound and fixed number the spec names, in one place.

The names follow the spec ("How Aerix works", especially its table "Every loop's bound").
Bounds that the user can change are settings fields instead (``aerix.domain.settings``:
``delegation.max_turns``, ``pool.start_timeout_secs``, ``context.soft_ratio`` …); their
defaults live there, next to the field, so there is still one place for each number.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

# --- The turn -------------------------------------------------------------------------------
#: Re-asks for a turn that did not parse or was cut by the token limit.
TURN_RETRIES: Final = 2
#: Calls kept per turn; the rest are dropped with a note.
MAX_CALLS_PER_TURN: Final = 8
#: A turn's thought is cut to this many characters (also the schema's maxLength).
THOUGHT_MAX_CHARS: Final = 600

# --- The turn schema's bounds on what a tool input names (aerix's own) -------------------------
# Under the JSON constraint a small model cannot run away in a string that names something: each
# such input field has a maxLength (JSON Schema counts characters, and so does llguidance).
# Free text (a file's content, an edit's text, a command, a final, a brief) stays unbounded.
#: Linux's PATH_MAX: no longer path names a file.
PATH_MAX_BYTES: Final = 4096
#: UTF-8 writes a character in at most this many bytes.
UTF8_MAX_BYTES_PER_CHAR: Final = 4
#: A path (read, write, edit, glob and grep's folder) in characters: whatever characters it is
#: made of, it stays within PATH_MAX_BYTES.
PATH_MAX_CHARS: Final = PATH_MAX_BYTES // UTF8_MAX_BYTES_PER_CHAR
#: A glob pattern or a grep regular expression names files or text to find: as long as a path.
PATTERN_MAX_CHARS: Final = PATH_MAX_CHARS
#: A name (a skill, an agent definition, a pool member, a context segment's id): a file name's
#: limit (NAME_MAX, 255 bytes), counted in characters; the names themselves are far shorter.
NAME_MAX_CHARS: Final = 255
#: A URL (web_fetch, refused anyway): the length browsers and servers reliably accept.
URL_MAX_CHARS: Final = 2048

# --- Aerix's own bounds for small models (not in the spec) ------------------------------------
# A small model on a CPU degenerates (the same few tokens over and over, a string that never
# closes) and loops (the same call every turn). These stop both early instead of spending the
# whole turn budget on them; docs/agent-loop.md, "Aerix's own bounds", lists them.
#: A re-ask after a cut or stopped turn asks for this fraction of the last ask (1/2), never less
#: than MIN_CUT_TURN_TOKENS: the same budget would only be cut again.
CUT_RETRY_DIVISOR: Final = 2
#: The degeneration guard aerix asks the pool for on every generation (a turn, a verdict, a
#: summary, a reflection): ``{}`` is the pool's defaults (caldrix/limits.py: a span of up to 256
#: tokens repeated 4 times over 64 tokens or more, a string open for 2,000 characters), so the
#: guard's figures live in one place. The pool stops such a generation with finish "degenerate".
GENERATION_GUARD: Final[Mapping[str, int]] = MappingProxyType({})
#: The same call with the same input as the agent's previous turn is not run again; the turn
#: that asks for nothing but such calls this many turns in a row ends the agent ``failed``.
IDENTICAL_TURNS: Final = 3
#: The same call (tool and input) that returned an error result this many times in one agent
#: run, in a row or not, ends the agent ``failed``: the same input keeps failing (A, B, A, B, A
#: counts A three times). A success of that call clears its count.
REPEATED_FAILURES: Final = 3
#: The same change (a ``write`` or ``edit`` with the same input) made this many times in one agent
#: run ends the agent ``failed``: made again it changes nothing, or undoes what came between
#: (A, B, A, B, A, each of them a write that succeeds, counts A three times).
REPEATED_CHANGES: Final = 3
#: The repeated call that ended an agent is named in its reason cut to this many characters,
#: and so is the error a repeated failing call returned.
REPEATED_CALL_SHOWN_CHARS: Final = 120

# --- An answer that copies the runtime's own words (aerix's own) ------------------------------
# A small model copies what it was shown: the re-ask note as its final, a compaction marker. Such a
# turn is refused and asked again (``aerix.domain.runtime_words``).
#: A final, a verdict's reason or a thought is a copy when at least this share of its characters
#: is copied from one runtime text (a note, the # Turns section, a marker), or from spans of
#: several stitched together …
COPIED_WORDS_MIN_SHARE: Final = 0.6
#: … counting only runs of at least this many characters in common (shorter ones are phrases
#: any answer may share with a note) …
COPIED_RUN_MIN_CHARS: Final = 8
#: … and at least this many copied characters in all ("The file was removed." shares
#: " was removed." with a note, and is an answer), and as many from each text stitched in …
COPIED_WORDS_MIN_CHARS: Final = 32
#: … taken from one stretch of the runtime text at most this many times the answer's length: a
#: span of it, not phrases picked from all over it.
COPIED_STRETCH_RATIO: Final = 1.5

# --- Context management ---------------------------------------------------------------------
#: Hard-limit hits before an agent is killed with "context floor: no room …".
HARD_LIMIT_HITS: Final = 2
#: A turn cut to the room left needs at least this many tokens of room.
MIN_CUT_TURN_TOKENS: Final = 64
#: Appends tried for one result: fitted, fitted after compaction, pointer alone.
RESULT_APPEND_TRIES: Final = 3
#: Segments this small (in tokens) are not worth compacting.
COMPACTION_SKIP_TOKENS: Final = 24
#: A turn asks for min(context.max_new_tokens, W / TURN_ASK_WINDOW_DIVISOR) tokens.
TURN_ASK_WINDOW_DIVISOR: Final = 4
#: The one place aerix converts bytes to tokens: fitting a tool result into the room left.
BYTES_PER_TOKEN: Final = 3

# --- Hooks ----------------------------------------------------------------------------------
#: A Stop/SubagentStop hook may extend one agent run at most this many times.
STOP_HOOK_CONTINUES: Final = 5
#: A hook handler's timeout when its settings give none.
HOOK_TIMEOUT_SECS: Final = 600
#: The shorter default for the events a person waits on.
HOOK_SHORT_TIMEOUT_SECS: Final = 30
HOOK_SHORT_TIMEOUT_EVENTS: Final = frozenset({"UserPromptSubmit", "SessionEnd"})
#: After TERM to a timed-out handler's process group, KILL follows this many seconds later.
HOOK_KILL_GRACE_SECS: Final = 2.0
#: A hook's answer strings (context, reasons, messages) longer than this are cut to a preview,
#: the whole kept in the session's spool, as Claude Code caps hook output at 10,000 characters.
HOOK_OUTPUT_MAX_CHARS: Final = 10_000
#: The ``hook`` event keeps this much of a handler's stdout and stderr.
HOOK_LOG_OUTPUT_CHARS: Final = 2_000
#: Bytes kept per stream of a handler. Not in the spec: a guard so a runaway handler cannot fill
#: memory before its timeout.
HOOK_CAPTURE_MAX_BYTES: Final = 1024 * 1024

# --- Routing --------------------------------------------------------------------------------
#: The routing generation's max_new_tokens.
ROUTING_MAX_TOKENS: Final = 8

# --- Tools ----------------------------------------------------------------------------------
#: bash: default and largest timeout_secs.
BASH_TIMEOUT_SECS: Final = 120
BASH_MAX_TIMEOUT_SECS: Final = 600
#: bash: after TERM to the process group, KILL follows this many seconds later.
BASH_KILL_GRACE_SECS: Final = 2.0
#: bash: how often a running command checks its cancel event.
BASH_CANCEL_POLL_SECS: Final = 0.1
#: bash: bytes kept per stream (stdout, stderr). Not in the spec: a guard so a runaway command
#: cannot fill memory before its timeout; the tool cap cuts results far below this anyway.
BASH_CAPTURE_MAX_BYTES: Final = 8 * 1024 * 1024
#: Waiting for background jobs at a final: the latest job's timeout plus this, polled every …
JOB_WAIT_EXTRA_SECS: Final = 10.0
JOB_WAIT_POLL_SECS: Final = 1.0

#: read: lines returned when no limit is given, and the cut for each line.
READ_LIMIT_LINES: Final = 200
#: The most files a prompt or a brief names that are attached to it, as ``read`` shows them
#: (``aerix.domain.attachments``); each shows at most READ_LIMIT_LINES lines.
ATTACHED_FILES_MAX: Final = 3
READ_LINE_MAX_CHARS: Final = 2000
#: grep: files larger than this are skipped; each matching line is cut; default max_matches.
GREP_MAX_FILE_BYTES: Final = 8 * 1024 * 1024
GREP_LINE_MAX_CHARS: Final = 400
GREP_MAX_MATCHES: Final = 200
#: Outside a git repository, glob/grep/repo_map walk the tree and skip these folders.
WALK_SKIP_DIRS: Final = frozenset({".git", "target", "node_modules"})

# --- The pool -------------------------------------------------------------------------------
#: Pool handshake and control requests.
POOL_CONTROL_TIMEOUT_SECS: Final = 30.0
#: Longest silence between two frames of a generation (Progress frames count).
FRAME_GAP_SECS: Final = 600.0
#: Autostart tries the socket this often, for up to pool.start_timeout_secs.
AUTOSTART_POLL_SECS: Final = 0.5

# --- git ------------------------------------------------------------------------------------
#: Every git call (the diff, the file set, a profile operation).
GIT_TIMEOUT_SECS: Final = 30.0
#: The remote lookup that names a project's key.
REMOTE_LOOKUP_TIMEOUT_SECS: Final = 10.0
#: Compare-and-swap retries of a profile write, then a named race refusal.
CAS_RETRIES: Final = 3

# --- Tuning a profile -----------------------------------------------------------------------
#: A revision keeps within these multiples of the release's text, in characters (aerix's own
#: bound: tuning must not drift far from the text the code was written for, run after run).
REVISION_MIN_RATIO: Final = 0.5
REVISION_MAX_RATIO: Final = 2.0
#: A reflection asks min(context.max_new_tokens, W / REFLECTION_ASK_WINDOW_DIVISOR) tokens, so its
#: prompt (the text and the evidence) keeps the other part of the window.
REFLECTION_ASK_WINDOW_DIVISOR: Final = 2
#: The reflection's reason is cut to this many characters (also the answer schema's maxLength).
REFLECTION_REASON_MAX_CHARS: Final = 400
#: A reflection also asks at most REVISION_MAX_RATIO times the release text's tokens plus this
#: many: the longest answer the length guard could accept, with the JSON around it and a reason
#: (400 characters are about 100 tokens; the rest is room for escapes). More is waste.
REFLECTION_ANSWER_SLACK_TOKENS: Final = 256
#: One evidence line shown to the reflection member is cut to this many characters.
EVIDENCE_LINE_MAX_CHARS: Final = 300
#: At most this many evidence lines per artifact; the newest are kept.
EVIDENCE_MAX_LINES: Final = 60
#: ``aerix profile log`` shows this many commits of each branch unless told otherwise.
PROFILE_LOG_LIMIT: Final = 20

# --- Exit codes -----------------------------------------------------------------------------
#: The root agent gave its final answer.
EXIT_DONE: Final = 0
#: A named failure, or a request that could not start.
EXIT_FAILED: Final = 1
#: A run that exhausted a bound (turns, retries …) exits with this status (the spec's).
EXIT_BUDGET: Final = 2
#: The runtime ended the agent (``context floor: no room …``, a hook's ``continue: false``).
EXIT_KILLED: Final = 3
#: A command line that cannot be used as written (BSD's EX_USAGE), kept apart from the budget's 2.
EXIT_USAGE: Final = 64
#: Ctrl-C.
EXIT_CANCELLED: Final = 130
#: The reader of the output went away (``aerix sessions list | head -1``): 128 + SIGPIPE, the
#: status a shell reports for ``git log | head``, reached quietly (no message, no traceback).
EXIT_BROKEN_PIPE: Final = 141
