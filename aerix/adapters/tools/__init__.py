"""The tools' implementations. ``LocalTools`` (runner.py) is the entry point; each module holds
one family: fs (read, write, edit), bash (+ background jobs), search (glob, grep), repo_map."""

from aerix.adapters.tools.bash import JobReport, JobTable
from aerix.adapters.tools.common import error_result, result_header, with_header
from aerix.adapters.tools.repo_map import RepoMapCache
from aerix.adapters.tools.runner import LOCAL_TOOLS, LocalTools, LocalToolsFactory

__all__ = [
    "LOCAL_TOOLS",
    "JobReport",
    "JobTable",
    "LocalTools",
    "LocalToolsFactory",
    "RepoMapCache",
    "error_result",
    "result_header",
    "with_header",
]
