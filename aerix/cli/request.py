"""Running ``aerix -p`` (``aerix.cli.parser`` reads its flags): one request, headless, or
``--input-format stream-json``'s prompts; the request itself is ``aerix.wiring``'s. Bare
``aerix``, the screen, is ``aerix.cli.screen``'s, so a headless request loads none of it."""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path

from aerix.adapters.project.settings_files import SettingsOverrides, parse_disallowed, parse_sources
from aerix.app.request.options import RequestFlags, SessionOptions
from aerix.claude_flags import ignored_note
from aerix.cli.parser import STDIN_PROMPT
from aerix.domain.bounds import EXIT_CANCELLED, EXIT_USAGE
from aerix.domain.profile import PROFILE_NAME_RULE, valid_profile_name
from aerix.domain.prompt_bytes import decode_prompt
from aerix.errors import AerixError
from aerix.wiring.requests import run_headless


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
    opening = SessionOptions(
        cwd=args.cwd or Path.cwd(),
        resume=args.resume,
        continue_latest=args.continue_latest,
        session_id=session_id,
        fork_session=args.fork_session,
        profile=args.profile,
        profile_refresh=args.profile_refresh,
    )
    flags = RequestFlags(args.max_turns, args.profile_refresh, args.append_system_prompt)
    overrides = SettingsOverrides(sources, args.extra_settings, disallowed, args.tools)
    try:
        if streamed:
            from aerix.wiring.stream_session import run_stream_input  # its modules: only for stream-json

            return run_stream_input(opening, flags, sys.stdin, overrides=overrides)
        options = flags.request(prompt, prompt_bytes)
        return run_headless(opening, options, args.output_format, overrides=overrides)
    except KeyboardInterrupt:
        print("aerix: cancelled", file=sys.stderr)
        return EXIT_CANCELLED


def _canonical_uuid(text: str) -> str | None:
    """A UUID written any way uuid.UUID reads it, as the dashed lowercase id; None if not one."""
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return None
