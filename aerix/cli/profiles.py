"""``aerix tune`` and ``aerix profile …`` (sync, edit, show, log): their parsers and
handlers, over ``aerix.wiring``'s profile commands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from aerix.adapters.profile_output import (
    StreamObserver,
    render_edit,
    render_log,
    render_show,
    render_sync,
    render_tune,
)
from aerix.app.profiles.manage import LOG_LIMIT, EditOptions
from aerix.app.profiles.sync import SyncOptions
from aerix.app.profiles.tune import TuneOptions
from aerix.domain.bounds import EXIT_CANCELLED
from aerix.domain.profile import MAIN_BRANCH, PROFILE_NAME_RULE, model_branch, valid_profile_name
from aerix.errors import UsageError
from aerix.wiring.commands import ProfileCommands, profile_commands


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
    tune.set_defaults(handler=cmd_tune)


def add_profile(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    profile = commands.add_parser("profile", help="the prompts kept in git for each model")
    sub = profile.add_subparsers(dest="profile_command", metavar="SUBCOMMAND", required=True)
    sync = sub.add_parser("sync", help="reconcile tuned texts the release has changed since")
    _branch_flags(sync)
    sync.add_argument("--dry-run", action="store_true", help="print a diff per text; commit nothing")
    _verbose_flag(sync)
    _profile_flags(sync)
    sync.set_defaults(handler=cmd_profile_sync)
    edit = sub.add_parser("edit", help="edit one text in $EDITOR and commit it")
    edit.add_argument("path", help="prompts/<name>.md, skills/<name>.md or agents/<name>.md")
    _branch_flags(edit)
    _profile_flags(edit)
    edit.set_defaults(handler=cmd_profile_edit)
    show = sub.add_parser("show", help="branches, heads, what each tunes and what is stale")
    show.add_argument("--json", action="store_true", help="print it as one JSON object")
    _profile_flags(show)
    show.set_defaults(handler=cmd_profile_show)
    log = sub.add_parser("log", help="the newest commits of main and each model base")
    _branch_flags(log)
    log.add_argument("-n", type=int, default=LOG_LIMIT, metavar="N", help=f"commits per branch ({LOG_LIMIT})")
    _profile_flags(log)
    log.set_defaults(handler=cmd_profile_log)


def _profile_args(args: argparse.Namespace) -> tuple[Path, str | None]:
    profile = getattr(args, "profile", None)
    if profile is not None and not valid_profile_name(profile):
        raise UsageError(f"--profile: {PROFILE_NAME_RULE} (got {profile!r})")
    return getattr(args, "cwd", None) or Path.cwd(), profile


def _branch(args: argparse.Namespace) -> str | None:
    if args.main:
        return MAIN_BRANCH
    return model_branch(args.model) if args.model else None


def cmd_tune(args: argparse.Namespace) -> int:
    cwd, profile = _profile_args(args)
    if args.sessions is not None and args.sessions < 1:
        raise UsageError("--sessions must be 1 or more")
    options = TuneOptions(cwd, profile, args.sessions, args.dry_run, args.member)
    return _reflecting(
        lambda profiles, heard: render_tune(profiles.tune(options, heard), sys.stdout), args.verbose
    )


def cmd_profile_sync(args: argparse.Namespace) -> int:
    cwd, profile = _profile_args(args)
    options = SyncOptions(cwd, profile, _branch(args), args.dry_run)
    return _reflecting(
        lambda profiles, heard: render_sync(profiles.sync(options, heard), sys.stdout), args.verbose
    )


def _reflecting(command: Callable[[ProfileCommands, StreamObserver], None], verbose: bool) -> int:
    """Run a command that reflects: progress on stderr as it goes, Ctrl-C one line."""
    try:
        with profile_commands() as profiles:
            command(profiles, StreamObserver(sys.stdout, sys.stderr, verbose=verbose))
    except KeyboardInterrupt:
        print("aerix: cancelled; what was not committed yet is dropped", file=sys.stderr)
        return EXIT_CANCELLED
    return 0


def cmd_profile_edit(args: argparse.Namespace) -> int:
    cwd, profile = _profile_args(args)
    with profile_commands() as profiles:
        outcome = profiles.edit(EditOptions(cwd, args.path, profile, args.model, args.main))
    render_edit(outcome, sys.stdout, sys.stderr)
    return 0


def cmd_profile_show(args: argparse.Namespace) -> int:
    cwd, profile = _profile_args(args)
    with profile_commands() as profiles:
        view = profiles.show(cwd, profile)
    render_show(view, sys.stdout, args.json)
    return 0


def cmd_profile_log(args: argparse.Namespace) -> int:
    cwd, profile = _profile_args(args)
    if args.n < 1:
        raise UsageError("-n must be 1 or more")
    with profile_commands() as profiles:
        entries = profiles.log(cwd, profile, _branch(args), args.n)
    render_log(entries, sys.stdout)
    return 0
