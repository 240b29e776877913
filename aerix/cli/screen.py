"""Bare ``aerix`` (``--resume``, ``--continue``, a first prompt): the screen on a terminal; its
own module, so that ``aerix -p`` never imports the screen's toolkit."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aerix.app.request.conversation import ConversationOptions
from aerix.cli.request import cmd_print
from aerix.domain.bounds import EXIT_CANCELLED, EXIT_USAGE
from aerix.domain.profile import PROFILE_NAME_RULE, valid_profile_name
from aerix.wiring.screen import run_interactive

NEEDS_A_TERMINAL = (
    "the interactive screen needs a terminal; run one request with -p PROMPT "
    "(or pipe it: echo PROMPT | aerix -p)"
)


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
