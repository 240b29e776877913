"""The Claude Code flags aerix's command line accepts, so a client built for Claude Code (the
Claude Agent SDK runs ``CLI --output-format stream-json --verbose --system-prompt '' …
--input-format stream-json``) can run aerix as its CLI.

Each flag either does what Claude Code's does (``ACTED_ON``, parsed in ``aerix.cli``) or is
accepted and named in one stderr note as ignored (``IGNORED``); docs/commands.md lists both.
"""

from __future__ import annotations

import argparse
from typing import Final

#: Flags aerix acts on as Claude Code does (their help says how).
ACTED_ON: Final = (
    "--append-system-prompt",
    "--session-id",
    "--settings",
    "--setting-sources",
    "--allowedTools",
    "--tools",
    "--disallowedTools",
    "--add-dir",
    "--max-budget-usd",
    "--permission-mode",
    "--dangerously-skip-permissions",
)

#: Flags accepted and ignored: (flag, takes a value, why), the reason for the docs.
IGNORED: Final[tuple[tuple[str, bool, str], ...]] = (
    ("--system-prompt", True, "aerix's system prompt holds the turn format and tools; empty is none"),
    ("--system-prompt-file", True, "as --system-prompt"),
    ("--model", True, "the model is the pool's main member (setting pool.main)"),
    ("--fallback-model", True, "as --model"),
    ("--mcp-config", True, "aerix has no MCP client"),
    ("--strict-mcp-config", False, "as --mcp-config"),
    ("--include-partial-messages", False, "stream-json has whole messages only"),
    ("--include-hook-events", False, "hook runs are system lines of subtype hook already"),
    ("--resume-session-at", True, "a resumed session continues from its end"),
    ("--resume-drops-turn", True, "as --resume-session-at"),
    ("--plugin-dir", True, "plugins are the enabled ones of the settings (enabledPlugins)"),
    ("--max-thinking-tokens", True, "a turn's thought is bounded by context.max_new_tokens"),
    ("--thinking", True, "as --max-thinking-tokens"),
    ("--thinking-display", True, "as --max-thinking-tokens"),
    ("--effort", True, "no effort levels"),
    ("--json-schema", True, "no structured_output; the result is the final answer"),
    ("--betas", True, "no API betas"),
    ("--permission-prompt-tool", True, "aerix -p asks no permission"),
    ("--task-budget", True, "budgets are turns (--max-turns) and tokens"),
    ("--session-mirror", False, "no session store mirroring"),
)

#: Claude Code's permission modes (--permission-mode); aerix -p runs as bypassPermissions.
PERMISSION_MODES: Final = ("default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions")


def add_claude_flags(group: argparse._ArgumentGroup) -> None:
    """The Claude Code flags of the request group (``--resume``, ``--continue``, ``--max-turns``,
    ``--output-format`` and ``--verbose`` are aerix's own and added beside them)."""
    group.add_argument(
        "--input-format",
        choices=("text", "stream-json"),
        default="text",
        help="text (default: the prompt is -p's or stdin's) or stream-json (Claude Code's: one JSON "
        "line a message on stdin, user messages and control requests; needs --output-format stream-json)",
    )
    group.add_argument(
        "--append-system-prompt",
        metavar="TEXT",
        help="add TEXT to the end of the system prompt (a new session's first request)",
    )
    group.add_argument("--session-id", metavar="UUID", help="the new session's id (a UUID not in use)")
    group.add_argument(
        "--fork-session",
        action="store_true",
        help="with --resume/--continue: copy that session to a new one (--session-id's, else a fresh "
        "id) and continue the copy; the original is left as it was",
    )
    group.add_argument(
        "--settings",
        dest="extra_settings",
        metavar="FILE_OR_JSON",
        help="one more settings file (or JSON text) above the local one, read as Claude Code's files are",
    )
    group.add_argument(
        "--setting-sources",
        metavar="SOURCES",
        help="which settings files to read: a comma-separated list of user, project, local",
    )
    group.add_argument(
        "--allowedTools",
        "--allowed-tools",
        dest="allowed_tools",
        action="append",
        metavar="TOOLS",
        help="accepted: aerix -p asks no permission, so every tool is allowed already "
        "(deny rules and --disallowedTools still hold)",
    )
    group.add_argument(
        "--tools",
        metavar="TOOLS",
        help='the tools every agent may have: "" none, "default" all, or names such as '
        "\"Read,Grep\" (Claude Code's or aerix's); the others leave every turn schema",
    )
    group.add_argument(
        "--disallowedTools",
        "--disallowed-tools",
        dest="disallowed_tools",
        action="append",
        metavar="RULES",
        help="deny rules added to permissions.deny, comma- or space-separated: Bash takes the tool "
        'away, "Bash(rm:*)" or "Read(./.env)" refuses the calls they match (docs/configuration.md)',
    )
    group.add_argument(
        "--add-dir",
        action="append",
        metavar="DIR",
        help="accepted: aerix's tools reach outside the working directory already",
    )
    group.add_argument(
        "--max-budget-usd",
        type=float,
        metavar="USD",
        help="accepted: a local model costs nothing (total_cost_usd is 0), so it is never reached",
    )
    group.add_argument(
        "--permission-mode",
        choices=PERMISSION_MODES,
        help="aerix -p runs as bypassPermissions; any other mode is named as ignored",
    )
    group.add_argument(
        "--dangerously-skip-permissions",
        action="store_true",
        help="accepted: aerix -p asks no permission",
    )
    for flag, takes_value, why in IGNORED:
        dest = "ignored_" + flag.lstrip("-").replace("-", "_")
        if takes_value:
            group.add_argument(flag, dest=dest, metavar="VALUE", help=f"ignored: {why}")
        else:
            group.add_argument(flag, dest=dest, action="store_true", help=f"ignored: {why}")


def ignored_flags(args: argparse.Namespace) -> list[str]:
    """The ignored flags given on this command line, for the one stderr note."""
    # Here, not at the top: the parser imports this module, and the Claude formats (with the
    # event models they stand on) load only when a request runs.
    from aerix.domain.claude_format import HEADLESS_PERMISSION_MODE

    named: list[str] = []
    for flag, takes_value, _ in IGNORED:
        value = getattr(args, "ignored_" + flag.lstrip("-").replace("-", "_"))
        if flag == "--system-prompt" and value == "":
            continue  # the SDK's default: no prompt of its own, which leaves aerix's in place
        if (value is not None) if takes_value else value:
            named.append(flag)
    if args.permission_mode not in (None, HEADLESS_PERMISSION_MODE):
        named.append(f"--permission-mode {args.permission_mode}")
    return named


def ignored_note(args: argparse.Namespace) -> str | None:
    """One line naming every ignored Claude Code flag given, or None."""
    named = ignored_flags(args)
    if not named:
        return None
    return f"ignored (Claude Code flags aerix does not act on; see docs/commands.md): {', '.join(named)}"


def _value_flags() -> frozenset[str]:
    """Every Claude Code flag of ``add_claude_flags`` that takes a value (so the first word that
    is neither one of them nor its value is the prompt: ``aerix --model m "fix it"``)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_claude_flags(parser.add_argument_group())
    return frozenset(
        option for action in parser._actions if action.nargs != 0 for option in action.option_strings
    )


CLAUDE_VALUE_FLAGS: Final = _value_flags()
