"""``aerix``'s command line: parse (``aerix.cli.parser``), then hand the command to its module.

The top level is where the agent's own flags go (``-p PROMPT``, ``--resume ID``,
``--continue``, ``--max-turns N``, ``--output-format``; ``aerix.cli.request`` runs them);
subcommands are named by the ``handler`` the parser set (``aerix.cli.sessions``,
``aerix.cli.profiles``). Each module is imported only when its command runs, so ``--version``,
``--help`` and a refused command line load none of them; and with the cycle collector held off
(``gc_paused``): the classes, functions and models an import makes live as long as the process,
and walking them again and again was up to a tenth of a request's imports.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from aerix.adapters.closed_pipe import discard_closed_output
from aerix.adapters.gc_pause import gc_paused
from aerix.cli.parser import STDIN_PROMPT, build_parser, command_names, print_mode, split_prompt
from aerix.domain.bounds import EXIT_BROKEN_PIPE, EXIT_USAGE
from aerix.errors import AerixError, FileUnusable, OutputClosed


def main(argv: Sequence[str] | None = None, ready: Callable[[], None] = lambda: None) -> int:
    """Run one command line. ``ready`` is called once the command's modules are imported, just
    before it runs (the console script hands Ctrl-C back to Python there). A closed pipe
    (``aerix sessions show ID | head``) ends any command quietly with EXIT_BROKEN_PIPE, as
    ``git log | head`` does: no message, no traceback."""
    try:
        return _run(argv, ready)
    except (BrokenPipeError, OutputClosed):
        discard_closed_output()
        return EXIT_BROKEN_PIPE


def _run(argv: Sequence[str] | None, ready: Callable[[], None]) -> int:
    parser = build_parser()
    words, first_prompt = split_prompt(sys.argv[1:] if argv is None else argv, command_names(parser))
    args = parser.parse_args(words)
    if args.resume is not None and not args.resume.strip():
        # An empty id would match every session as a prefix, or none: refuse it, never start anew.
        print("aerix: --resume needs a session id; `aerix sessions list` shows them", file=sys.stderr)
        return EXIT_USAGE
    if args.handler is None:
        if print_mode(args):
            with gc_paused():
                from aerix.cli.request import cmd_print

            ready()
            if args.print_prompt in (None, STDIN_PROMPT) and first_prompt is not None:
                args.print_prompt = first_prompt
            return cmd_print(args)
        with gc_paused():
            from aerix.cli.screen import cmd_interactive

        ready()
        return cmd_interactive(args, first_prompt)
    with gc_paused():
        handler = args.handler.load()
    ready()
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
