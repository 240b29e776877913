"""``LocalTools``: runs every tool that needs no loop state, and turns any failure into an
``error: …`` result. ``plan``, ``context`` and ``agent`` belong to the loop and are not here."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from aerix.adapters.project.skills import SkillCatalog
from aerix.adapters.tools.bash import JobTable, bash_tool
from aerix.adapters.tools.common import ToolFailure, error_result, resolve_path
from aerix.adapters.tools.fs import UnreadWrite, edit_tool, read_tool, write_tool
from aerix.adapters.tools.python_checks import BrokenPython, judged_as_python, python_baseline
from aerix.adapters.tools.repo_map import RepoMapCache
from aerix.adapters.tools.search import glob_tool, grep_tool
from aerix.app.ports.project import SkillSource
from aerix.domain import bounds
from aerix.domain.tools import REFUSED_TOOLS

#: The tools ``LocalTools.run`` answers.
LOCAL_TOOLS: Final = frozenset(
    {"read", "write", "edit", "bash", "glob", "grep", "repo_map", "skill", "web_fetch", "web_search"}
)

#: A second whole-file ``write`` of one file in one turn would throw away the first: both were
#: composed before either ran. On simple-cipher the 1.5B sent the class, then a ``__main__``
#: block, as two writes of simple_cipher.py; the second replaced the class, and it answered done.
WRITTEN_THIS_TURN = (
    "{path} was already written by an earlier write of this turn, and this write would replace "
    "all of it, so it was not made. Write the file once, with everything it should hold."
)


class LocalTools:
    """One agent's file, shell and search tools, bound to its working directory and job table."""

    def __init__(
        self,
        cwd: Path,
        *,
        jobs: JobTable | None = None,
        repo_maps: RepoMapCache | None = None,
        skills: SkillSource | None = None,
    ) -> None:
        self.cwd = cwd
        self.jobs = jobs if jobs is not None else JobTable(cwd)
        self.repo_maps = repo_maps if repo_maps is not None else RepoMapCache()
        self.skills: SkillSource = skills if skills is not None else SkillCatalog(())
        #: Files whose text this agent has had in its context, or wrote: the ones ``write`` may
        #: replace (see ``write_tool``).
        self.seen_files: set[Path] = set()
        #: Files read (or shown by a refused write) this turn: seen once the turn's results are in
        #: the context, at ``end_turn``.
        self._shown_this_turn: set[Path] = set()
        #: Files a ``write`` of this turn wrote: another whole-file write of one in the same turn
        #: is refused (WRITTEN_THIS_TURN).
        self._written_this_turn: set[Path] = set()
        #: Whether each file this agent changed was judged as Python when it first changed it
        #: (``judged_as_python``): one that was not never is (``UNPARSABLE_PYTHON``).
        self._judged_python: dict[Path, bool] = {}
        #: Each judged .py file's text whose undefined names are not this work's, taken when this
        #: agent first changes it (``python_baseline``).
        self._baselines: dict[Path, str | None] = {}

    def _judges(self, target: Path) -> bool:
        if target not in self._judged_python:
            self._judged_python[target] = judged_as_python(self.cwd, target)
        return self._judged_python[target]

    def _baseline(self, target: Path, judged: bool) -> str | None:
        if not judged or target.suffix != ".py":
            return None
        if target not in self._baselines:
            self._baselines[target] = python_baseline(self.cwd, target)
        return self._baselines[target]

    def mark_seen(self, paths: Iterable[str]) -> None:
        self.seen_files.update(resolve_path(self.cwd, path) for path in paths)

    def end_turn(self) -> None:
        """The turn's results are in the agent's context now: what they showed counts as seen."""
        self.seen_files |= self._shown_this_turn
        self._shown_this_turn.clear()
        self._written_this_turn.clear()

    def run(
        self,
        tool: str,
        tool_input: Mapping[str, Any],
        cancel: threading.Event | None = None,
        unsearchable: Callable[[str], bool] | None = None,
    ) -> str:
        """The result text of one call; never raises for a tool failure."""
        try:
            return self._dispatch(tool, dict(tool_input), cancel, unsearchable)
        except ToolFailure as exc:
            return error_result(str(exc))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            return error_result(f"{tool} failed: {exc}")

    def _dispatch(
        self,
        tool: str,
        args: dict[str, Any],
        cancel: threading.Event | None,
        unsearchable: Callable[[str], bool] | None,
    ) -> str:
        if tool in REFUSED_TOOLS:
            raise ToolFailure(f"{tool} is not available: aerix's tools do not use the network")
        if tool == "read":
            text = read_tool(
                self.cwd, args["path"], args.get("offset", 1), args.get("limit", bounds.READ_LIMIT_LINES)
            )
            self._shown_this_turn.add(resolve_path(self.cwd, args["path"]))
            return text
        if tool == "write":
            target = resolve_path(self.cwd, args["path"])
            if target in self._written_this_turn:
                raise ToolFailure(WRITTEN_THIS_TURN.format(path=args["path"]))
            judged = self._judges(target)
            baseline = self._baseline(target, judged)
            try:
                text = write_tool(self.cwd, args["path"], args["content"], self.seen_files, judged, baseline)
            except UnreadWrite:
                self._shown_this_turn.add(target)
                raise
            except BrokenPython:
                self.seen_files.add(target)  # written: the agent knows what the file holds
                self._written_this_turn.add(target)
                raise
            self.seen_files.add(target)
            self._written_this_turn.add(target)
            return text
        if tool == "edit":
            target = resolve_path(self.cwd, args["path"])
            judged = self._judges(target)
            replace_all = bool(args.get("replace_all", False))
            baseline = self._baseline(target, judged)
            return edit_tool(self.cwd, args["path"], args["old"], args["new"], replace_all, judged, baseline)
        if tool == "bash":
            if args.get("background"):
                return self.jobs.start(args["command"], args.get("timeout_secs"))
            return bash_tool(self.cwd, args["command"], args.get("timeout_secs"), cancel)
        if tool == "glob":
            return glob_tool(self.cwd, args["pattern"], args.get("path"))
        if tool == "grep":
            return grep_tool(
                self.cwd,
                args["pattern"],
                args.get("path"),
                args.get("glob"),
                args.get("max_matches", bounds.GREP_MAX_MATCHES),
                unsearchable,
            )
        if tool == "repo_map":
            return self.repo_maps.get(self.cwd)
        if tool == "skill":
            return self.skills.run_tool(args.get("name"), args.get("args", ""), bool(args.get("list", False)))
        raise ToolFailure(f"{tool} is not a local tool")


class LocalToolsFactory:
    """:class:`aerix.app.ports.ToolRunnerFactory`: each agent run gets its own ``LocalTools``
    (its own job table), all sharing one repo map cache. Make one per request, so the map is
    computed once per request and never outlives it."""

    def __init__(self) -> None:
        self.repo_maps = RepoMapCache()

    def __call__(self, cwd: Path, skills: SkillSource | None) -> LocalTools:
        return LocalTools(cwd, repo_maps=self.repo_maps, skills=skills)
