"""``aerix``'s command line as argparse reads it: every command's flags, the first prompt taken
out of argv, and nothing that runs a command.

This module imports only the standard library and aerix's light modules (the bounds, the Claude
Code flags), so ``aerix --version`` and ``aerix --help`` answer without loading the event
models, the screen's toolkit or the store. Each command's handler is named, not imported
(``Command``): its module (``aerix.cli.request``, ``sessions``, ``profiles``) loads only when
that command runs.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple, NoReturn

from aerix import __version__
from aerix.adapters.claude.output_formats import OUTPUT_FORMATS
from aerix.claude_flags import CLAUDE_VALUE_FLAGS, add_claude_flags
from aerix.domain.bounds import EXIT_USAGE, PROFILE_LOG_LIMIT

#: The top-level flags that take a value, so the first other word is a subcommand or the prompt.
_VALUE_FLAGS = (
    frozenset({"--resume", "--max-turns", "--output-format", "--cwd", "--profile"}) | CLAUDE_VALUE_FLAGS
)
_OPTIONAL_VALUE_FLAGS = frozenset({"-p", "--print"})
#: ``-p``'s value when it is given none: the prompt comes on stdin.
STDIN_PROMPT = "\0stdin"
#: How alike a word must be to a choice for "did you mean" (difflib's own default ratio).
CHOICE_CUTOFF = 0.6
#: How alike a lone first word must be to a command to be taken as its typo, not as a prompt
#: (difflib's ratio; "session" → sessions is 0.93, while "more" → import, 0.6, stays a prompt).
TYPO_CUTOFF = 0.8


class Command(NamedTuple):
    """A subcommand's handler by module and function name: the module is imported when the
    command runs, so parsing (and ``--help``) never loads what the other commands need.
    (A named tuple, not a dataclass: ``dataclasses`` imports ``inspect``, a tenth of the budget.)"""

    module: str
    function: str

    def load(self) -> Callable[[argparse.Namespace], int]:
        # __import__, the import statement's own hook, not importlib.import_module: so the
        # import is seen as any other (-X importtime names it, as the start-up tests rely on).
        module = __import__(self.module, fromlist=[self.function])
        handler: Callable[[argparse.Namespace], int] = getattr(module, self.function)
        return handler


def _sessions_command(function: str) -> Command:
    return Command("aerix.cli.sessions", function)


def _profiles_command(function: str) -> Command:
    return Command("aerix.cli.profiles", function)


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


def command_names(parser: argparse.ArgumentParser) -> list[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


def add_request_flags(parser: argparse.ArgumentParser) -> None:
    """The agent's own flags (``aerix -p``); ``aerix.cli.request`` runs them."""
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


def add_sessions(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sessions = commands.add_parser("sessions", help="list, show, remove and rebuild sessions")
    sub = sessions.add_subparsers(dest="sessions_command", metavar="SUBCOMMAND", required=True)
    listing = sub.add_parser("list", help="this project's sessions, newest first")
    listing.add_argument("--json", action="store_true", help="print the index entries as JSON")
    listing.add_argument("--all", action="store_true", help="every project's sessions")
    listing.set_defaults(handler=_sessions_command("cmd_list"))
    show = sub.add_parser("show", help="a readable replay of a session")
    show.add_argument("id", help="session id (or a unique prefix)")
    show.add_argument("--json", action="store_true", help="print the events as JSON lines")
    show.set_defaults(handler=_sessions_command("cmd_show"))
    remove = sub.add_parser("rm", help="delete a session: log, spool files, transcript, index entry")
    remove.add_argument("id")
    remove.set_defaults(handler=_sessions_command("cmd_rm"))
    rebuild = sub.add_parser("rebuild", help="verify logs and rebuild the index and transcripts")
    target = rebuild.add_mutually_exclusive_group(required=True)
    target.add_argument("id", nargs="?", help="one session")
    target.add_argument("--all", action="store_true", help="every session of every project")
    rebuild.set_defaults(handler=_sessions_command("cmd_rebuild"))
    schema = sub.add_parser("schema", help="print (or write) the JSON Schema of every event")
    schema.add_argument("--out", type=Path, help="write one <type>.schema.json per event into this folder")
    schema.set_defaults(handler=_sessions_command("cmd_schema"))


def add_import(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    importing = commands.add_parser("import", help="copy sessions from another tool")
    sub = importing.add_subparsers(dest="import_source", metavar="SOURCE", required=True)
    claude = sub.add_parser("claude", help="Claude Code transcripts (default: its projects folder)")
    claude.add_argument("paths", nargs="*", type=Path, help="transcript files or folders")
    claude.set_defaults(handler=_sessions_command("cmd_import_claude"))


def _profile_flags(parser: argparse.ArgumentParser) -> None:
    """What every tune and profile command takes; SUPPRESS keeps ``aerix --profile X tune`` too."""
    parser.add_argument(
        "--profile", metavar="NAME", default=argparse.SUPPRESS, help="the profile (default: the setting)"
    )
    parser.add_argument(
        "--cwd", type=Path, metavar="DIR", default=argparse.SUPPRESS, help="the project whose settings apply"
    )


def _branch_flags(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--model", metavar="M", help="the model base of M (default: pool.main's)")
    target.add_argument("--main", action="store_true", help="the main branch")


def _verbose_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--verbose", action="store_true", help="print each answer's text as it streams (stderr)"
    )


def add_tune(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tune = commands.add_parser("tune", help="revise the main model's prompts from its own sessions")
    tune.add_argument("--sessions", type=int, metavar="N", help="read the newest N sessions (tune.sessions)")
    tune.add_argument("--dry-run", action="store_true", help="print a diff per revision; commit nothing")
    tune.add_argument("--member", metavar="MODEL", help="the reflection member's model (tune.member)")
    _verbose_flag(tune)
    _profile_flags(tune)
    tune.set_defaults(handler=_profiles_command("cmd_tune"))


def add_profile(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    profile = commands.add_parser("profile", help="the prompts kept in git for each model")
    sub = profile.add_subparsers(dest="profile_command", metavar="SUBCOMMAND", required=True)
    sync = sub.add_parser("sync", help="reconcile tuned texts the release has changed since")
    _branch_flags(sync)
    sync.add_argument("--dry-run", action="store_true", help="print a diff per text; commit nothing")
    _verbose_flag(sync)
    _profile_flags(sync)
    sync.set_defaults(handler=_profiles_command("cmd_profile_sync"))
    edit = sub.add_parser("edit", help="edit one text in $EDITOR and commit it")
    edit.add_argument("path", help="prompts/<name>.md, skills/<name>.md or agents/<name>.md")
    _branch_flags(edit)
    _profile_flags(edit)
    edit.set_defaults(handler=_profiles_command("cmd_profile_edit"))
    show = sub.add_parser("show", help="branches, heads, what each tunes and what is stale")
    show.add_argument("--json", action="store_true", help="print it as one JSON object")
    _profile_flags(show)
    show.set_defaults(handler=_profiles_command("cmd_profile_show"))
    log = sub.add_parser("log", help="the newest commits of main and each model base")
    _branch_flags(log)
    log.add_argument(
        "-n",
        type=int,
        default=PROFILE_LOG_LIMIT,
        metavar="N",
        help=f"commits per branch ({PROFILE_LOG_LIMIT})",
    )
    _profile_flags(log)
    log.set_defaults(handler=_profiles_command("cmd_profile_log"))


def print_mode(args: argparse.Namespace) -> bool:
    """-p, or (as Claude Code's) stream-json output or input without it: one request's run."""
    if args.command is not None:
        return False
    return args.print_prompt is not None or "stream-json" in (args.output_format, args.input_format)
