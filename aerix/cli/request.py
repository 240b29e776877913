"""The agent's own flags, and running them: ``aerix -p`` (one request, headless, or
``--input-format stream-json``'s prompts) and bare ``aerix`` (the screen on a terminal); the
request itself is ``aerix.wiring``'s."""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path

from aerix.adapters.output import OUTPUT_FORMATS
from aerix.adapters.settings_files import SettingsOverrides, parse_disallowed, parse_sources
from aerix.app.request.conversation import ConversationOptions
from aerix.app.request.options import RequestOptions
from aerix.claude_flags import add_claude_flags, ignored_note
from aerix.domain.bounds import EXIT_CANCELLED, EXIT_USAGE
from aerix.domain.profile import PROFILE_NAME_RULE, valid_profile_name
from aerix.domain.prompt_bytes import decode_prompt
from aerix.errors import AerixError
from aerix.wiring.requests import run_headless, run_interactive
from aerix.wiring.stream_session import run_stream_input

NEEDS_A_TERMINAL = (
    "the interactive screen needs a terminal; run one request with -p PROMPT "
    "(or pipe it: echo PROMPT | aerix -p)"
)
#: ``-p``'s value when it is given none: the prompt comes on stdin.
STDIN_PROMPT = "\0stdin"


def add_request_flags(parser: argparse.ArgumentParser) -> None:
    """The agent's own flags (``aerix -p``); the request itself is ``aerix.wiring``."""
    group = parser.add_argument_group("one request (headless)")
    group.add_argument(
        "-p",
        "--print",
        dest="print_prompt",
        nargs="?",
        const=STDIN_PROMPT,
        default=None,
        metavar="PROMPT",
        help="run one request and exit; without PROMPT, read it from stdin",
    )
    group.add_argument("--resume", metavar="ID", help="continue this session (id or unique prefix)")
    group.add_argument(
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="continue this project's latest session",
    )
    group.add_argument("--max-turns", type=int, metavar="N", help="the root agent's turn budget")
    group.add_argument(
        "--profile", metavar="NAME", help="read the prompts from this profile (setting: profile)"
    )
    group.add_argument(
        "--profile-refresh",
        action="store_true",
        help="with --resume/--continue: move the session to its model base's newest prompts first",
    )
    group.add_argument(
        "--output-format",
        choices=OUTPUT_FORMATS,
        default="text",
        help="text (default), json (one object) or stream-json (one event a line)",
    )
    group.add_argument("--in-place", action="store_true", help="accepted; -p always runs in place")
    group.add_argument(
        "--verbose",
        action="store_true",
        help="accepted, as Claude Code's stream-json needs it; the output is the same",
    )
    group.add_argument("--cwd", type=Path, metavar="DIR", help="run in DIR instead of the current directory")
    add_claude_flags(group)


def cmd_interactive(args: argparse.Namespace, first_prompt: str | None) -> int:
    """Bare ``aerix`` (``--resume``, ``--continue``, a first prompt): the screen on a terminal;
    elsewhere a given prompt runs as plain ``-p`` would, and none is one line saying to use ``-p``."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        if first_prompt is None:
            print(f"aerix: {NEEDS_A_TERMINAL}", file=sys.stderr)
            return EXIT_USAGE
        args.print_prompt = first_prompt
        return cmd_print(args)
    if args.max_turns is not None and args.max_turns < 1:
        print("aerix: --max-turns must be 1 or more", file=sys.stderr)
        return EXIT_USAGE
    if args.resume and args.continue_latest:
        print("aerix: --resume and --continue both name a session; give one of them", file=sys.stderr)
        return EXIT_USAGE
    if args.profile is not None and not valid_profile_name(args.profile):
        print(f"aerix: --profile: {PROFILE_NAME_RULE} (got {args.profile!r})", file=sys.stderr)
        return EXIT_USAGE
    options = ConversationOptions(
        cwd=args.cwd or Path.cwd(),
        resume=args.resume,
        continue_latest=args.continue_latest,
        max_turns=args.max_turns,
        first_prompt=first_prompt,
        profile=args.profile,
        profile_refresh=args.profile_refresh,
        fork_session=args.fork_session,
    )
    try:
        return run_interactive(options)
    except KeyboardInterrupt:
        return EXIT_CANCELLED


def cmd_print(args: argparse.Namespace) -> int:
    streamed = args.input_format == "stream-json"
    if streamed and args.output_format != "stream-json":
        print("aerix: --input-format stream-json needs --output-format stream-json", file=sys.stderr)
        return EXIT_USAGE
    if streamed and args.print_prompt not in (None, STDIN_PROMPT):
        print(
            "aerix: with --input-format stream-json the prompts come on stdin; drop -p's PROMPT",
            file=sys.stderr,
        )
        return EXIT_USAGE
    prompt, prompt_bytes = "", None
    if not streamed:
        # Bytes, not text: a prompt that is not valid UTF-8 is read with U+FFFD and its bytes kept.
        # (argv arrives decoded with surrogateescape; os.fsencode gives back its bytes.)
        if args.print_prompt not in (None, STDIN_PROMPT):
            raw = os.fsencode(args.print_prompt)
        else:
            raw = sys.stdin.buffer.read() if sys.stdin is not None else b""  # `aerix -p <&-`: no stdin
        decoded = decode_prompt(raw)
        prompt, prompt_bytes = decoded.text, decoded.raw
        if not prompt.strip():
            print("aerix: the prompt is empty; give it after -p or on stdin", file=sys.stderr)
            return EXIT_USAGE
    if args.max_turns is not None and args.max_turns < 1:
        print("aerix: --max-turns must be 1 or more", file=sys.stderr)
        return EXIT_USAGE
    if args.profile is not None and not valid_profile_name(args.profile):
        print(f"aerix: --profile: {PROFILE_NAME_RULE} (got {args.profile!r})", file=sys.stderr)
        return EXIT_USAGE
    session_id = None if args.session_id is None else _canonical_uuid(args.session_id)
    if args.session_id is not None and session_id is None:
        print(
            f"aerix: --session-id {args.session_id} is not a UUID; give one such as {uuid.uuid4()}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        sources = None if args.setting_sources is None else parse_sources(args.setting_sources)
        disallowed = parse_disallowed(args.disallowed_tools)
    except AerixError as error:
        print(f"aerix: {error}", file=sys.stderr)
        return EXIT_USAGE
    note = ignored_note(args)
    if note:
        print(f"aerix: {note}", file=sys.stderr)
    options = RequestOptions(
        prompt=prompt,
        prompt_bytes=prompt_bytes,
        cwd=args.cwd or Path.cwd(),
        resume=args.resume,
        continue_latest=args.continue_latest,
        max_turns=args.max_turns,
        profile=args.profile,
        profile_refresh=args.profile_refresh,
        session_id=session_id,
        append_system_prompt=args.append_system_prompt,
        fork_session=args.fork_session,
    )
    overrides = SettingsOverrides(sources, args.extra_settings, disallowed, args.tools)
    try:
        if streamed:
            return run_stream_input(options, sys.stdin, overrides=overrides)
        return run_headless(options, args.output_format, overrides=overrides)
    except KeyboardInterrupt:
        print("aerix: cancelled", file=sys.stderr)
        return EXIT_CANCELLED


def _canonical_uuid(text: str) -> str | None:
    """A UUID written any way uuid.UUID reads it, as the dashed lowercase id; None if not one."""
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return None


def print_mode(args: argparse.Namespace) -> bool:
    """-p, or (as Claude Code's) stream-json output or input without it: one request's run."""
    if args.command is not None:
        return False
    return args.print_prompt is not None or "stream-json" in (args.output_format, args.input_format)
