"""What the profile commands print: progress and notes on one stream (stderr), outcomes on the
other (stdout), as plain lines a person reads and a script can grep."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from aerix.app.ports.profiles import (
    EditOutcome,
    ProfileCommit,
    ProfileObserver,
    ProfileView,
    Refused,
    Revision,
    SyncReport,
    TuneReport,
)
from aerix.domain.profile import short_commit

#: A progress line on a terminal is redrawn at most this often while an answer streams.
PROGRESS_REDRAW_SECS = 0.25


class StreamObserver(ProfileObserver):
    """Progress on ``err``, diffs on ``out``. Each reflection's answer is one progress line (its
    tokens so far and their rate, redrawn in place on a terminal, written once it ends
    elsewhere); ``verbose`` prints the answer's text as it streams instead."""

    def __init__(
        self, out: TextIO, err: TextIO, *, verbose: bool = False, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.out, self.err = out, err
        self.verbose = verbose
        self._clock = clock
        self._live = err.isatty()
        self._streaming = False
        self._tokens = 0
        self._started = 0.0
        self._drawn = 0.0

    def line(self, text: str) -> None:
        self._end_stream()
        print(text, file=self.err, flush=True)

    def artifact(self, index: int, total: int, path: str) -> None:
        self.line(f"[{index}/{total}] {path}")

    def token(self, text: str) -> None:
        now = self._clock()
        if not self._streaming:
            self._streaming, self._tokens, self._started, self._drawn = True, 0, now, now
        self._tokens += 1
        if self.verbose:
            self.err.write(text)
            self.err.flush()
        elif self._live and now - self._drawn >= PROGRESS_REDRAW_SECS:
            self._drawn = now
            self.err.write("\r" + self._progress(now))
            self.err.flush()

    def answered(self) -> None:
        self._end_stream()

    def diff(self, text: str) -> None:
        self._end_stream()
        self.out.write(text)
        self.out.flush()

    def _progress(self, now: float) -> str:
        seconds = now - self._started
        rate = f", {self._tokens / seconds:.1f} tokens/s" if seconds > 0 else ""
        return f"  answer: {self._tokens} tokens in {seconds:.1f} s{rate}"

    def _end_stream(self) -> None:
        if not self._streaming:
            return
        self._streaming = False
        if self.verbose:
            self.err.write("\n")
        else:
            self.err.write(("\r" if self._live else "") + self._progress(self._clock()) + "\n")
        self.err.flush()


def _revisions(revisions: Sequence[Revision], out: TextIO) -> None:
    for revision in revisions:
        print(f"  {revision.path}: {revision.reason or 'no reason given'}", file=out)


def _refused(refused: Sequence[Refused], out: TextIO) -> None:
    for item in refused:
        print(f"refused: {item.path}: {item.reason}", file=out)


def render_sync(report: SyncReport, out: TextIO) -> None:
    if not report.stale:
        print(f"profile {report.profile}, {report.branch}: nothing tuned is stale; nothing to sync", file=out)
        return
    _outcome(report.profile, report.branch, report.commit, report.revisions, report.dry_run, out)
    _refused(report.refused, out)


def render_tune(report: TuneReport, out: TextIO) -> None:
    if report.sync is not None and report.sync.stale:
        render_sync(report.sync, out)
    if report.sessions == 0:
        print(
            f"no sessions of {report.model} on profile {report.profile} yet; nothing to tune "
            "(run some requests first)",
            file=out,
        )
        return
    _outcome(report.profile, report.branch, report.commit, report.revisions, report.dry_run, out)
    _refused(report.refused, out)
    if report.without_evidence:
        print(f"not asked (no evidence): {', '.join(report.without_evidence)}", file=out)


def _outcome(
    profile: str, branch: str, commit: str | None, revisions: Sequence[Revision], dry_run: bool, out: TextIO
) -> None:
    count = f"{len(revisions)} revision{'s' if len(revisions) != 1 else ''}"
    if dry_run:
        print(f"dry run: {count} for {branch} of profile {profile}; nothing committed", file=out)
    elif commit is None:
        print(f"no revision passed; {branch} of profile {profile} is unchanged", file=out)
    else:
        print(f"committed {count} to {branch} of profile {profile} as {short_commit(commit)}", file=out)
    _revisions(revisions, out)


def render_edit(outcome: EditOutcome, out: TextIO, err: TextIO) -> None:
    for warning in outcome.warnings:
        print(f"aerix: warning: {outcome.path}: {warning}", file=err)
    if outcome.commit is None:
        print(f"{outcome.path} unchanged; nothing committed", file=out)
    else:
        print(
            f"committed {outcome.path} to {outcome.branch} of profile {outcome.profile} "
            f"as {short_commit(outcome.commit)}",
            file=out,
        )


def show_json(view: ProfileView) -> dict[str, Any]:
    return {
        "profile": view.name,
        "path": str(view.path),
        "branches": [
            {
                "name": branch.name,
                "head": branch.head,
                "subject": branch.subject,
                "time": branch.time.isoformat() if branch.time else None,
                "tunes": list(branch.tuned),
                "stale": list(branch.stale),
                "upstream_problem": branch.upstream_problem,
            }
            for branch in view.branches
        ],
        "sessions": {commit: sorted(ids) for commit, ids in view.sessions.items()},
    }


def render_show(view: ProfileView, out: TextIO, as_json: bool = False) -> None:
    if as_json:
        print(json.dumps(show_json(view), indent=1, ensure_ascii=False), file=out)
        return
    print(f"profile {view.name}  {view.path}", file=out)
    width = max((len(branch.name) for branch in view.branches), default=4)
    for branch in view.branches:
        print(f"{branch.name:<{width}}  {short_commit(branch.head)}  {branch.subject}", file=out)
        if branch.upstream_problem is not None:
            print(f"  {branch.upstream_problem}: what it tunes cannot be told", file=out)
            continue
        print(f"  tunes: {', '.join(branch.tuned) or 'nothing (the release texts)'}", file=out)
        print(f"  stale: {', '.join(branch.stale) or 'none'}", file=out)
    count = sum(len(ids) for ids in view.sessions.values())
    if count:
        at = ", ".join(
            f"{short_commit(commit)}: {len(ids)}"
            for commit, ids in sorted(view.sessions.items(), key=lambda kv: -len(kv[1]))
        )
        print(f"sessions: {count} branches at {len(view.sessions)} commits ({at})", file=out)


def render_log(entries: Sequence[tuple[str, list[ProfileCommit]]], out: TextIO) -> None:
    for number, (branch, commits) in enumerate(entries):
        if number:
            print(file=out)
        print(f"{branch}:", file=out)
        for commit in commits:
            print(
                f"  {short_commit(commit.id)}  {commit.time.isoformat(timespec='seconds')}  {commit.subject}",
                file=out,
            )
            body = commit.message.split("\n", 1)[1].strip() if "\n" in commit.message else ""
            for line in body.splitlines():
                print(f"      {line}", file=out)
