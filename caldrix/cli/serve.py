"""``caldrix serve`` (the HTTP front) and ``caldrix launch claude``.

Argument parsing lives in :mod:`caldrix.cli.main`; these functions check the values, find or
start the pool, and run the front (or the front and Claude Code). The front's packages
(starlette, uvicorn) are imported only here, when one of these commands runs.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import anyio

from caldrix.errors import UsageError
from caldrix.front.app import Front
from caldrix.front.http_server import run_server
from caldrix.front.launch import (
    claude_environment,
    find_claude,
    free_port,
    mark_onboarded,
    new_key,
    running_front,
)
from caldrix.front.pool_start import find_or_start
from caldrix.front.request_log import RequestLog
from caldrix.front.service import FrontService
from caldrix.front.settings import (
    API_KEY_ENV,
    LAUNCH_TOOL_TEXT,
    LOOPBACK_HOSTS,
    MAX_RESEND_GRACE_SECS,
    POOL_START_SECS,
    TOOL_TEXTS,
    FrontSettings,
    ModelRoute,
    ToolText,
)
from caldrix.protocol.roles import DECISION_MEMBER, MAIN_MEMBER

T = TypeVar("T")


def serve_command(args: argparse.Namespace) -> int:
    settings = front_settings(args)
    found = anyio.run(find_or_start, settings.socket, args.load, _pool_flags(args), POOL_START_SECS)
    logging.basicConfig(level=logging.INFO, format="caldrix serve: %(message)s", stream=sys.stderr)
    log = RequestLog(settings.log_requests) if settings.log_requests is not None else None
    started = "started" if found.started else "found"
    print(
        f"caldrix serve: listening on http://{_url_host(settings.host)}:{settings.port} "
        f"({started} the pool on {found.socket}, pid {found.pid})",
        file=sys.stderr,
        flush=True,
    )
    service = FrontService(FrontSettings(**{**settings.__dict__, "socket": found.socket}))
    run_server(Front(service.settings, service, log).app(), service.settings)
    return 0


def front_settings(args: argparse.Namespace) -> FrontSettings:
    """The front's settings from its flags, each checked with a one-line refusal."""
    key = args.api_key or os.environ.get(API_KEY_ENV) or None
    if args.host not in LOOPBACK_HOSTS and not key:
        raise UsageError(
            f"--host {args.host} reaches this machine from elsewhere: give --api-key KEY "
            f"(or {API_KEY_ENV}) so only clients that hold it are served"
        )
    if not 0 < args.port < 65536:
        raise UsageError("--port must be from 1 to 65535")
    default_bound, bounds = _per_member(
        args.max_output_tokens,
        _output_bound,
        "--max-output-tokens {}: give N or MEMBER=N, N at least 1",
    )
    tool_texts: dict[str, ToolText]  # declared: inferring T would widen the literal modes to str
    default_tool_text: ToolText | None
    default_tool_text, tool_texts = _per_member(
        args.tool_text,
        _tool_text,
        "--tool-text {}: give MODE or MEMBER=MODE, MODE one of " + ", ".join(TOOL_TEXTS),
    )
    routes = []
    for value in args.model:
        pattern, sep, member = value.partition("=")
        if not sep or not pattern or not member:
            raise UsageError(f"--model {value}: give PATTERN=MEMBER (claude-*=main)")
        routes.append(ModelRoute(pattern, member))
    for flag, figure in (
        ("--max-body-bytes", args.max_body_bytes),
        ("--max-connections", args.max_connections),
    ):
        if figure is not None and figure < 1:
            raise UsageError(f"{flag} must be 1 or more")
    grace = args.resend_grace
    if grace is not None and not 0 <= grace <= MAX_RESEND_GRACE_SECS:
        raise UsageError(f"--resend-grace must be from 0 to {MAX_RESEND_GRACE_SECS:g} seconds")
    defaults = FrontSettings()
    return FrontSettings(
        host=args.host,
        port=args.port,
        api_key=key,
        socket=args.socket,
        routes=tuple(routes),
        default_member=args.default_member,
        max_output_tokens=default_bound or defaults.max_output_tokens,
        member_max_output=bounds,
        log_requests=args.log_requests,
        max_body_bytes=args.max_body_bytes or defaults.max_body_bytes,
        max_connections=args.max_connections or defaults.max_connections,
        ping_secs=args.ping_interval or defaults.ping_secs,
        resend_grace_secs=defaults.resend_grace_secs if grace is None else grace,
        tool_text=default_tool_text or defaults.tool_text,
        member_tool_text=tool_texts,
    )


def _per_member(
    values: Sequence[str], parse: Callable[[str], T | None], refusal: str
) -> tuple[T | None, dict[str, T]]:
    """A flag given as ``VALUE`` or ``MEMBER=VALUE``, repeatable: (the value for every member,
    the members' own); ``parse`` gives None for a value it refuses, and ``refusal`` (the value
    as given in its ``{}``) is the one line then."""
    default: T | None = None
    own: dict[str, T] = {}
    for value in values:
        member, _, text = value.rpartition("=")
        parsed = parse(text)
        if parsed is None:
            raise UsageError(refusal.format(value))
        if member:
            own[member] = parsed
        else:
            default = parsed
    return default, own


def _output_bound(figure: str) -> int | None:
    return int(figure) if figure.isdigit() and int(figure) >= 1 else None


def _tool_text(mode: str) -> ToolText | None:
    return next((known for known in TOOL_TEXTS if known == mode), None)


def launch_command(args: argparse.Namespace, claude_args: list[str]) -> int:
    """Find or start the pool, start a front on a free port, run claude on it."""
    if args.program != "claude":
        raise UsageError(f"caldrix launch runs claude, not {args.program!r}")
    claude = find_claude(args.claude)
    found = anyio.run(find_or_start, args.socket, args.load, _pool_flags(args), POOL_START_SECS)
    members = anyio.run(_member_names, found.socket)
    small = DECISION_MEMBER if DECISION_MEMBER in members else MAIN_MEMBER
    port = free_port("127.0.0.1")
    url = f"http://127.0.0.1:{port}"
    key = new_key()
    serve_args = ["--socket", str(found.socket), "--port", str(port), *args.serve_flag]
    if not any(flag.startswith("--tool-text") for flag in args.serve_flag):
        serve_args += ["--tool-text", LAUNCH_TOOL_TEXT]
    if args.onboarded:
        config = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home())
        print(f"caldrix launch: marked onboarded in {mark_onboarded(config)}", file=sys.stderr)
    env = claude_environment(os.environ, url, key, MAIN_MEMBER, small)
    with running_front(serve_args, url, key):
        return subprocess.call([claude, *claude_args], env=env)


async def _member_names(socket: Path) -> set[str]:
    return {member.name for member in await FrontService(FrontSettings(socket=socket)).members()}


def _pool_flags(args: argparse.Namespace) -> list[str]:
    return shlex.split(args.pool_flags or "")


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
