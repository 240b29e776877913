"""``aerix``'s command line: the parser, the first prompt taken out of argv, and the dispatch.

The top level is where the agent's own flags go (``-p PROMPT``, ``--resume ID``,
``--continue``, ``--max-turns N``, ``--output-format``; ``aerix.cli.request`` runs them);
subcommands are looked up in handlers set with ``set_defaults(handler=...)`` by the modules
that add them (``aerix.cli.sessions``, ``aerix.cli.profiles``). Argument parsing only: each
command calls one use case and renders its result.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from typing import NoReturn

from aerix import __version__
from aerix.adapters.output import discard_closed_output
from aerix.claude_flags import CLAUDE_VALUE_FLAGS
from aerix.cli.profiles import add_profile, add_tune
from aerix.cli.request import STDIN_PROMPT, add_request_flags, cmd_interactive, cmd_print, print_mode
from aerix.cli.sessions import add_import, add_sessions
from aerix.domain.bounds import EXIT_BROKEN_PIPE, EXIT_USAGE
from aerix.errors import AerixError, FileUnusable, OutputClosed

#: The top-level flags that take a value, so the first other word is a subcommand or the prompt.
_VALUE_FLAGS = (
    frozenset({"--resume", "--max-turns", "--output-format", "--cwd", "--profile"}) | CLAUDE_VALUE_FLAGS
)
_OPTIONAL_VALUE_FLAGS = frozenset({"-p", "--print"})


class _Parser(argparse.ArgumentParser):
    """argparse, but a refused command line exits with EXIT_USAGE (2 is the budget's status),
    and a mistyped command or choice is answered with the nearest one."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    def _check_value(self, action: argparse.Action, value: object) -> None:
        if action.choices is None or value in action.choices:
            return
        choices = [str(choice) for choice in action.choices]
        raise argparse.ArgumentError(action, invalid_choice(str(value), choices))


def invalid_choice(value: str, choices: Sequence[str]) -> str:
    """``invalid choice 'session'; did you mean 'sessions'?``, or the choices when none is near."""
    nearest = close_choice(value, choices)
    if nearest is not None:
        return f"invalid choice {value!r}; did you mean {nearest!r}?"
    return f"invalid choice {value!r} (choose from {', '.join(choices)})"


#: How alike a word must be to a choice for "did you mean" (difflib's own default ratio).
CHOICE_CUTOFF = 0.6
#: How alike a lone first word must be to a command to be taken as its typo, not as a prompt
#: (difflib's ratio; "session" → sessions is 0.93, while "more" → import, 0.6, stays a prompt).
TYPO_CUTOFF = 0.8


def close_choice(word: str, choices: Sequence[str], cutoff: float = CHOICE_CUTOFF) -> str | None:
    """The one choice ``word`` is most likely a typo of, if any is at least ``cutoff`` alike."""
    return next(iter(difflib.get_close_matches(word, choices, n=1, cutoff=cutoff)), None)


def build_parser() -> argparse.ArgumentParser:
    # No abbreviations: with Claude Code's flags beside aerix's, `sessions rebuild --all` would
    # otherwise be read as an ambiguous --allowedTools, and a typo as some other flag.
    parser: argparse.ArgumentParser = _Parser(
        prog="aerix", description="A local-first coding agent for the terminal.", allow_abbrev=False
    )
    parser.add_argument("--version", action="version", version=f"aerix {__version__}")
    add_request_flags(parser)
    parser.set_defaults(handler=None)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_sessions(commands)
    add_import(commands)
    add_tune(commands)
    add_profile(commands)
    return parser


def split_prompt(argv: Sequence[str], commands: Sequence[str]) -> tuple[list[str], str | None]:
    """``aerix [flags] "first prompt" [flags]`` as Claude Code accepts it: the first word that is
    neither a flag, a flag's value nor a subcommand is the prompt (taken out of ``argv``)."""
    words = list(argv)
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            rest = words[index + 1 :]
            return words[:index], (" ".join(rest) if rest else None)
        if word in _VALUE_FLAGS:
            index += 2
            continue
        if word in _OPTIONAL_VALUE_FLAGS:
            following = words[index + 1] if index + 1 < len(words) else None
            index += 2 if following is not None and not following.startswith("-") else 1
            continue
        if word.startswith("-"):
            index += 1
            continue
        # A one-word near miss of a command (`aerix session list`) is a typo, not a prompt: it
        # stays for the parser, which names the command meant.
        if word in commands or (" " not in word and close_choice(word, commands, TYPO_CUTOFF)):
            return words, None
        return words[:index] + words[index + 1 :], word
    return words, None


def _command_names(parser: argparse.ArgumentParser) -> list[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line. A closed pipe (``aerix sessions show ID | head``) ends any command
    quietly with EXIT_BROKEN_PIPE, as ``git log | head`` does: no message, no traceback."""
    try:
        return _run(argv)
    except (BrokenPipeError, OutputClosed):
        discard_closed_output()
        return EXIT_BROKEN_PIPE


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    words, first_prompt = split_prompt(sys.argv[1:] if argv is None else argv, _command_names(parser))
    args = parser.parse_args(words)
    if args.resume is not None and not args.resume.strip():
        # An empty id would match every session as a prefix, or none: refuse it, never start anew.
        print("aerix: --resume needs a session id; `aerix sessions list` shows them", file=sys.stderr)
        return EXIT_USAGE
    if print_mode(args):
        if args.print_prompt in (None, STDIN_PROMPT) and first_prompt is not None:
            args.print_prompt = first_prompt
        return cmd_print(args)
    handler = args.handler
    if handler is None:
        return cmd_interactive(args, first_prompt)
    try:
        return int(handler(args))
    except AerixError as error:
        print(f"aerix: {error}", file=sys.stderr)
        return error.exit_code
    except BrokenPipeError:
        raise  # main's to end quietly
    except OSError as error:  # the store's folder is a file, unwritable, full…: one line, not a traceback
        unusable = FileUnusable(error)
        print(f"aerix: {unusable}", file=sys.stderr)
        return unusable.exit_code
