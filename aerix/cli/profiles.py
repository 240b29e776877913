"""``aerix tune`` and ``aerix profile …`` (sync, edit, show, log): their handlers, over
``aerix.wiring``'s profile commands (``aerix.cli.parser`` reads their flags)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from aerix.adapters.console.profile_output import (
    StreamObserver,
    render_edit,
    render_log,
    render_show,
    render_sync,
    render_tune,
)
from aerix.app.profiles.manage import EditOptions
from aerix.app.profiles.sync import SyncOptions
from aerix.app.profiles.tune import TuneOptions
from aerix.domain.bounds import EXIT_CANCELLED
from aerix.domain.profile import MAIN_BRANCH, PROFILE_NAME_RULE, model_branch, valid_profile_name
from aerix.errors import UsageError
from aerix.wiring.profile_commands import ProfileCommands, profile_commands


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
