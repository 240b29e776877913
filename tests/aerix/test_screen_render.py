"""Render tests of the screen's pieces: each printed into a rich Console on a StringIO at a
given width and compared as exact text (trailing spaces of a line dropped), the way rich tests
its own renderables. Colours are checked where they carry meaning (note levels, the diff)."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console, Group, RenderableType
from rich.text import Text

from aerix.adapters.terminal.diff_view import diff_text
from aerix.adapters.terminal.help import COMMANDS, KEYS, PLAN_KEYS, help_block
from aerix.adapters.terminal.launch import LaunchInfo, launch_frame
from aerix.adapters.terminal.live_lines import Activity, context_line, diff_line, stats_line, status_line
from aerix.adapters.terminal.live_region import LiveState, live_lines
from aerix.adapters.terminal.startup_block import StartupView, profile_text, startup_block
from aerix.adapters.terminal.transcript import Transcript, depth_of, prompt_echo, short_result
from aerix.app.ports.screen import StartupNote
from aerix.domain import bounds
from aerix.domain import events as ev
from aerix.domain.diffs import FileStat, RequestDiff
from aerix.domain.repeats import twin_result, unchanged_result
from aerix.projections.index import IndexEntry
from aerix.projections.status import ContextFigure, DiffFigure, StatsFigure, StatusFigures

HOME = Path("/home/ana")
INFO = LaunchInfo("smollm2-135m", "cpu", 8192, HOME / "src" / "demo", "0.1.0", home=HOME)
T0 = datetime(2026, 1, 2, 19, 3, 44, tzinfo=UTC)


def render(renderable: RenderableType | None, width: int = 80) -> str:
    console = Console(file=io.StringIO(), width=width)
    console.print(renderable)
    return "\n".join(line.rstrip() for line in console.file.getvalue().splitlines())  # type: ignore[attr-defined]


def render_ansi(renderable: RenderableType, width: int = 80) -> str:
    console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system="truecolor")
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined, no-any-return]


# ---- the launch frame ------------------------------------------------------------------------


def test_launch_frame_at_100_columns_has_the_peak_beside_the_wordmark() -> None:
    assert render(launch_frame(INFO, 100), 100) == "\n".join(
        [
            "╭──────────────────────────────────────────────────────────────────────────────╮",
            "│       ▗▄▖           ▄███▄  ███████ ██████▄  ██ ██   ██                       │",
            "│      ▟███▙         ██▀ ▀██ ██      ██   ██  ██  ██ ██                        │",
            "│     ▟█████▙ ▗▄▖    ███████ █████   ██████▀  ██   ███                         │",
            "│    ▟███████▙███▙   ██   ██ ██      ██  ▀██  ██  ██ ██                        │",
            "│   ▟█████████████   ██   ██ ███████ ██   ██  ██ ██   ██                       │",
            "│                                                                              │",
            "│ smollm2-135m · cpu · 8,192 tokens · ~/src/demo · aerix 0.1.0                 │",
            "│ enter send · ctrl-j newline · esc cancel · /help · ? keys                    │",
            "╰──────────────────────────────────────────────────────────────────────────────╯",
        ]
    )


def test_launch_frame_at_64_columns_has_the_wordmark_alone() -> None:
    assert render(launch_frame(INFO, 64), 64) == "\n".join(
        [
            "╭──────────────────────────────────────────────────────────────╮",
            "│  ▄███▄  ███████ ██████▄  ██ ██   ██                          │",
            "│ ██▀ ▀██ ██      ██   ██  ██  ██ ██                           │",
            "│ ███████ █████   ██████▀  ██   ███                            │",
            "│ ██   ██ ██      ██  ▀██  ██  ██ ██                           │",
            "│ ██   ██ ███████ ██   ██  ██ ██   ██                          │",
            "│                                                              │",
            "│ smollm2-135m · cpu · 8,192 tokens · ~/src/demo · aerix 0.1.0 │",
            "│ enter send · ctrl-j newline · esc cancel · /help · ? keys    │",
            "╰──────────────────────────────────────────────────────────────╯",
        ]
    )


def test_launch_frame_at_40_columns_has_the_word_and_a_resumed_session_says_so() -> None:
    resumed = LaunchInfo("smollm2-135m", "cpu", 8192, Path("/srv/demo"), "0.1.0", resumed=True, home=HOME)
    assert render(launch_frame(resumed, 40), 40) == "\n".join(
        [
            "╭──────────────────────────────────────╮",
            "│ aerix                                │",
            "│                                      │",
            "│ smollm2-135m · cpu · 8,192 tokens ·  │",
            "│ /srv/demo · aerix 0.1.0 · resumed    │",
            "│ enter send · ctrl-j newline · esc    │",
            "│ cancel · /help · ? keys              │",
            "╰──────────────────────────────────────╯",
        ]
    )


@pytest.mark.parametrize(
    ("width", "mark", "wordmark"), [(72, True, True), (71, False, True), (58, False, True)]
)
def test_the_frame_narrows_at_the_spec_widths(width: int, mark: bool, wordmark: bool) -> None:
    text = render(launch_frame(INFO, width), width)
    assert ("▟███▙" in text) is mark
    assert ("███████ █████" in text) is wordmark
    below = render(launch_frame(INFO, 57), 57)
    assert "███" not in below and "│ aerix" in below


def test_the_home_directory_is_written_as_a_tilde() -> None:
    at_home = LaunchInfo("m", "gpu", 4096, HOME, "0.1.0", home=HOME)
    assert "m · gpu · 4,096 tokens · ~ · aerix 0.1.0" in render(launch_frame(at_home, 100), 100)


# ---- the startup block -----------------------------------------------------------------------


def test_startup_block_rows_notes_of_each_level_and_ready() -> None:
    view = StartupView(
        model="smollm2-135m",
        lane="cpu",
        socket=HOME / ".run" / "aerix" / "pool.sock",
        session="1f3a9c2e7b5d4c3a",
        threads=2,
        decision="qwen2.5-0.5b",
        instruction_files=2,
        skills=3,
        agents=1,
        hooks=1,
        notes=(
            StartupNote("the running pool serves other-model as main", "warning"),
            StartupNote("settings.json: not JSON; ignored", "error"),
            StartupNote("plugin demo is disabled", "info"),
        ),
        ready_secs=1.43,
        home=HOME,
    )
    assert render(startup_block(view), 100) == "\n".join(
        [
            "pool     smollm2-135m · cpu lane · 2 threads · decision qwen2.5-0.5b · ~/.run/aerix/pool.sock",
            "profile  embedded prompts",
            "loaded   2 instruction files · 3 skills · 1 agent · 0 plugins · 1 hook",
            "session  1f3a9c2e7b5d4c3a new",
            "▲ the running pool serves other-model as main",
            "✗ settings.json: not JSON; ignored",
            "  plugin demo is disabled",
            "✓ ready in 1.4 s",
        ]
    )
    ansi = render_ansi(startup_block(view), 100)
    assert "\x1b[38;2;232;116;59m▲" in ansi  # ember
    assert "\x1b[1;31m✗" in ansi  # bold red
    assert "\x1b[32m✓" in ansi


def test_startup_block_of_a_gpu_member_resumed_while_starting() -> None:
    view = StartupView("big", "gpu", Path("/run/p.sock"), "abc", resumed=True, threads=8, home=HOME)
    assert render(startup_block(view), 60) == "\n".join(
        [
            "pool     big · gpu lane · /run/p.sock",
            "profile  embedded prompts",
            "loaded   0 instruction files · 0 skills · 0 agents · 0",
            "         plugins · 0 hooks",
            "session  abc resumed",
        ]
    )


def test_the_profile_row_names_the_profile_its_model_base_the_commit_and_what_it_tunes() -> None:
    profile = {
        "name": "default",
        "model_branch": "model/smollm2-135m",
        "branch": "session/abc",
        "commit": "8c01f2e4a9d1b2c3d4e5f60718293a4b5c6d7e8f",
        "tuned": 2,
    }
    view = StartupView("m", "cpu", Path("/run/p.sock"), "abc", profile=profile_text(profile), home=HOME)
    lines = render(startup_block(view), 100).splitlines()
    assert lines[1] == "profile  default · model/smollm2-135m · 8c01f2e4a9d1 · 2 tuned"
    # An upstream.json that does not parse leaves the count out; no profile at all: embedded prompts.
    assert profile_text({**profile, "tuned": None}) == "default · model/smollm2-135m · 8c01f2e4a9d1"
    assert profile_text(None) == "embedded prompts"


# ---- the live lines ------------------------------------------------------------------------


def test_status_line_with_queued_prompts_and_cancelling() -> None:
    figures = StatusFigures(root_turn=3, root_max_turns=40, tool_calls=5)
    assert (
        render(status_line(figures, Activity(12.34, queued=2)))
        == "⠸ 12s · turn 3/40 · 5 tool calls · 2 queued"
    )
    assert render(status_line(figures, Activity(0.05, cancelling=True))) == (
        "⠋ 0s · turn 3/40 · 5 tool calls · cancelling…"
    )
    one = StatusFigures(root_turn=1, tool_calls=1)
    assert render(status_line(one, Activity(61.0))) == "⠋ 61s · turn 1 · 1 tool call"


def test_context_line_from_the_pool_then_approximate_after_a_compaction() -> None:
    assert context_line(None) is None
    assert render(context_line(ContextFigure(1893, 8192, False), streaming_tokens=7)) == (
        "context 1,900 / 8,192 tokens (23%)"
    )
    assert render(context_line(ContextFigure(1431, 8192, True), streaming_tokens=7)) == (
        "context ≈1,431 / 8,192 tokens (17%)"
    )


def test_diff_line_with_and_without_the_verifier() -> None:
    assert diff_line(None, None) is None
    assert diff_line(DiffFigure(0, 0, 0), None) is None
    assert render(diff_line(DiffFigure(12, 3, 2), "pending")) == "diff +12 −3 · 2 files · verifier pending"
    assert render(diff_line(DiffFigure(1, 0, 1), None)) == "diff +1 −0 · 1 file"
    assert render(diff_line(None, "failed")) == "verifier failed"


def test_stats_line_with_a_rate_and_with_too_little_streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    import time

    time.tzset()
    try:
        assert (
            render(stats_line(StatsFigure(41, 3.3, 12.4, 14.2, T0)))
            == "41 tokens · 12.4 tok/s · 14.2 s · 19:03:44"
        )
        assert (
            render(stats_line(StatsFigure(2, 0.01, None, 125.0, T0)))
            == "2 tokens · – tok/s · 2 m 05 s · 19:03:44"
        )
    finally:
        monkeypatch.undo()
        time.tzset()


# ---- the transcript --------------------------------------------------------------------------

_seq = iter(range(1, 10_000))


def event(cls: type[ev.EventBase], **fields: object) -> ev.EventBase:
    return cls(seq=next(_seq), time=T0, **fields)


def call(call_id: str, tool: str, **tool_input: object) -> ev.ToolCall:
    return ev.ToolCall(id=call_id, tool=tool, input=tool_input)


def test_a_request_with_tool_calls_a_subagent_and_a_markdown_final() -> None:
    brief = "Fix the failing add test in app.py"
    events = [
        event(ev.RouteDecision, choice="edit", scores={"edit": -0.1}),
        event(
            ev.Message,
            agent="a1",
            role="assistant",
            turn=1,
            text="{}",
            thought="Look at the tests first.",
            calls=[
                call("c1", "read", path="tests/test_app.py"),
                call("c2", "bash", command="pytest -q"),
                call("c3", "agent", brief=brief),
            ],
        ),
        event(
            ev.Message,
            agent="a1",
            role="tool",
            text="[read c1]\n1\timport pytest\n2\tx",
            call="c1",
            tool="read",
        ),
        event(
            ev.Message,
            agent="a1",
            role="tool",
            text="[bash c2]\nF.\n1 failed\n[exit 1]",
            call="c2",
            tool="bash",
        ),
        event(ev.AgentSpawn, agent="a1.c3", parent="a1", kind="implementer", call="c3", brief=brief),
        event(
            ev.Message,
            agent="a1.c3",
            role="assistant",
            turn=1,
            text="{}",
            thought="Edit add.",
            calls=[call("c1", "edit", path="app.py", old="-", new="+")],
        ),
        event(
            ev.Message,
            agent="a1.c3",
            role="tool",
            text="[edit c1]\nerror: old text not found in app.py",
            call="c1",
            tool="edit",
            is_error=True,
        ),
        event(ev.AgentEnd, agent="a1.c3", outcome="done", summary="Fixed add.\nMore."),
        event(ev.AgentSpawn, agent="a1.c3.v1", parent="a1.c3", kind="verifier", call="c3"),
        event(
            ev.Message,
            agent="a1.c3.v1",
            role="assistant",
            turn=1,
            text="{}",
            thought="Run the tests.",
            verdict="pass",
            reason="all pass",
        ),
        event(ev.AgentEnd, agent="a1.c3.v1", outcome="done", verdict="pass"),
        event(
            ev.Message,
            agent="a1",
            role="tool",
            text='[agent c3]\n{"summary": "Fixed add.", "outcome": "done"}',
            call="c3",
            tool="agent",
        ),
        event(
            ev.Message,
            agent="a1",
            role="assistant",
            turn=2,
            text="{}",
            final="Fixed **add**:\n\n- the sum\n- a test",
        ),
    ]
    transcript = Transcript()
    printed = [render(prompt_echo("Fix the add test"))]
    for record in events:
        printed += [render(line) for line in transcript.lines(record)]
    assert "\n".join(printed) == "\n".join(
        [
            "› Fix the add test",
            "route edit",
            "● Look at the tests first.",
            "⎿ read tests/test_app.py → 2 lines",
            "⎿ bash pytest -q → exit 1 · 2 lines",
            "↳ a1.c3 implementer · Fix the failing add test in app.py",
            "  ● Edit add.",
            "  ⎿ edit app.py → error: old text not found in app.py",
            "  a1.c3 done · Fixed add.",
            "↳ a1.c3.v1 verifier",
            "  ● Run the tests.",
            "  verdict pass · all pass",
            "  a1.c3.v1 done",
            "⎿ agent Fix the failing add test in app.py → done · Fixed add.",
            "",
            "Fixed add:",
            "",
            " • the sum",
            " • a test",
        ]
    )
    assert transcript.pending == {}


def test_calls_still_running_are_listed_for_the_live_region() -> None:
    transcript = Transcript()
    turn = event(
        ev.Message,
        agent="a1.c2",
        role="assistant",
        turn=1,
        text="{}",
        calls=[call("c1", "bash", command="sleep 60"), call("c2", "repo_map")],
    )
    assert transcript.lines(turn) == []
    assert [render(line) for line in transcript.running()] == ["  ⎿ bash sleep 60 …", "  ⎿ repo_map …"]


def test_depth_counts_agent_calls_not_retries_or_verifiers() -> None:
    assert [depth_of(a) for a in ("a1", "a1.c3", "a1.c3.r1", "a1.c3.v2", "a1.c3.c1", "a1.c3.r1.c4.v1")] == [
        0,
        1,
        1,
        1,
        2,
        2,
    ]


@pytest.mark.parametrize(
    ("tool", "text", "short"),
    [
        ("read", "[read c1]\n1\ta\n2\tb\n3\tc", "3 lines"),
        ("bash", "[bash c1]\n[timeout after 5s]", "timeout after 5s · 0 lines"),
        ("bash", "[bash c1]\nstarted job j1 (sleep 9)", "started job j1 (sleep 9)"),
        ("glob", "[glob c1]\na.py\nb.py", "2 files"),
        ("grep", "[grep c1]\na.py:1:x", "1 match"),
        ("grep", "[grep c1]\nno matches for x", "no matches for x"),
        ("write", "[write c1]\nwrote a.py (3 bytes, 1 lines)", "wrote a.py (3 bytes, 1 lines)"),
        ("agent", "[agent c1]\nnot json at all", "not json at all"),
    ],
)
def test_short_results(tool: str, text: str, short: str) -> None:
    assert short_result(tool, text) == short


def test_a_call_that_was_not_run_again_says_so_instead_of_counting_its_lines() -> None:
    """A repeated call's result is a note to the model ("unchanged since call c1: …"), not output:
    the screen says it was not run again, from the event's ``unchanged_since``."""
    transcript = Transcript()
    turn = event(
        ev.Message,
        agent="a1",
        role="assistant",
        turn=2,
        text="{}",
        thought="Look again.",
        calls=[call("c2", "read", path="a.txt"), call("c3", "bash", command="wc -l a.txt")],
    )
    results = [
        event(
            ev.Message,
            agent="a1",
            role="tool",
            text=f"[{tool} {call_id}]\n{unchanged_result(tool, since)}",
            call=call_id,
            tool=tool,
            unchanged_since=since,
        )
        for call_id, tool, since in (("c2", "read", "c1"), ("c3", "bash", "c0"))
    ]
    printed = [render(line) for record in (turn, *results) for line in transcript.lines(record)]
    assert printed == [
        "● Look again.",
        "⎿ read a.txt → unchanged since c1 · not run again",
        "⎿ bash wc -l a.txt → unchanged since c0 · not run again",
    ]
    # The same call twice in one turn ran once: the twin says so, not "not run again".
    twins = event(
        ev.Message,
        agent="a1",
        role="assistant",
        turn=3,
        text="{}",
        calls=[call("c4", "read", path="b.txt"), call("c5", "read", path="b.txt")],
    )
    first = event(ev.Message, agent="a1", role="tool", text="[read c4]\nb", call="c4", tool="read")
    twin = event(
        ev.Message,
        agent="a1",
        role="tool",
        text=f"[read c5]\n{twin_result('read', 'c4')}",
        call="c5",
        tool="read",
        unchanged_since="c4",
    )
    printed = [render(line) for record in (twins, first, twin) for line in transcript.lines(record)]
    assert printed[-1] == "⎿ read b.txt → same as c4 in this turn · ran once"
    # A result that only reads like one (a file holding those words) is counted as any other.
    [quoted] = transcript.lines(
        event(
            ev.Message,
            agent="a1",
            role="tool",
            text=f"[read c4]\n1\t{unchanged_result('read', 'c1')}",
            call="c4",
            tool="read",
        )
    )
    assert render(quoted) == "⎿ read → 1 line"


def test_plans_compactions_jobs_and_parse_errors_have_their_lines() -> None:
    transcript = Transcript()
    lines = [
        event(ev.Plan, agent="a1.c1", text="1. read\n2. fix"),
        event(ev.Compaction, agent="a1", replaced=[], tokens_before=1738, tokens_after=431),
        event(ev.Job, agent="a1", job="j1", command="make test", state="exited", exit=0),
        event(
            ev.Message, agent="a1", role="assistant", turn=4, text="oops", parse_error="no JSON object found"
        ),
        event(
            ev.Message,
            agent="a1",
            role="assistant",
            turn=4,
            text="oops",
            parse_error="no JSON object found",
            attempt=bounds.TURN_RETRIES,
        ),
    ]
    printed = [render(line) for record in lines for line in transcript.lines(record)]
    assert printed == [
        "  ● plan (a1.c1)\n    1. read\n    2. fix",
        "compacted 0 segments (1,738 → ≈431 tokens)",
        "job j1 exited 0 · make test",
        "turn 4 did not parse: no JSON object found; asked again",
        "turn 4 did not parse: no JSON object found",  # the last attempt: the agent fails next
    ]


# ---- the diff ------------------------------------------------------------------------------


def test_the_diff_in_gits_colours_with_untracked_lines() -> None:
    diff = RequestDiff(
        text="diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
        "-    return a - b\n+    return a + b\n",
        stats=(FileStat("app.py", 1, 1),),
        untracked=("notes.txt",),
    )
    assert render_ansi(diff_text(diff) or "") == (
        "\x1b[1mdiff --git a/app.py b/app.py\x1b[0m\n"
        "\x1b[1m--- a/app.py\x1b[0m\n"
        "\x1b[1m+++ b/app.py\x1b[0m\n"
        "\x1b[36m@@ -1,2 +1,2 @@\x1b[0m\n"
        " def add(a, b):\n"
        "\x1b[31m-    return a - b\x1b[0m\n"
        "\x1b[32m+    return a + b\x1b[0m\n"
        "\x1b[2muntracked: notes.txt\x1b[0m\n"
    )
    assert diff_text(RequestDiff()) is None


# ---- the live region and the help ------------------------------------------------------------


def test_the_live_region_while_a_request_runs_with_a_queue_and_a_waiting_plan() -> None:
    figures = StatusFigures(root_turn=2, root_max_turns=40, tool_calls=3)
    figures.context = ContextFigure(1893, 8192, False)
    state = LiveState(
        figures=figures,
        running=True,
        activity=Activity(4.2, queued=4, streaming_tokens=7),
        running_calls=[Text("⎿ bash pytest -q …")],
        queued=["and now the README\nwith a second line", "two", "three", "four"],
        session_diff=DiffFigure(3, 1, 1),
        gate=True,
    )
    assert render(Group(*live_lines(state, 80))) == "\n".join(
        [
            "⠹ 4s · turn 2/40 · 3 tool calls · 4 queued",
            "⎿ bash pytest -q …",
            "context 1,900 / 8,192 tokens (23%)",
            "diff +3 −1 · 1 file",
            "queued and now the README",
            "queued two",
            "queued three",
            "… 1 more queued",
            "plan waiting · enter accept · e edit · esc abort",
        ]
    )


def test_an_idle_live_region_is_empty_until_there_are_figures() -> None:
    assert live_lines(LiveState(figures=StatusFigures()), 80) == []
    hinted = LiveState(figures=StatusFigures(), hint="ctrl-c again to exit")
    assert render(Group(*live_lines(hinted, 80))) == "ctrl-c again to exit"


def test_the_resume_picker_marks_the_chosen_session() -> None:
    entries = [
        IndexEntry(id="1f3a9c2e7b5d", updated=T0, title="Fix the add test", requests=3),
        IndexEntry(id="9b8c7d6e5f4a", updated=T0, title="", requests=1),
        IndexEntry(
            id="c0ffee000000", updated=T0, title="Fix the add test", requests=4, forked_from="1f3a9c2e7b5d"
        ),
    ]
    text = render(Group(*live_lines(LiveState(figures=StatusFigures(), picks=entries, pick_index=1), 80)))
    lines = text.splitlines()
    assert lines[0] == "resume which session? ↑ ↓ · enter · esc"
    assert lines[1].startswith("  1f3a9c2e  ") and lines[1].endswith(" 3  Fix the add test")
    assert lines[2].startswith("› 9b8c7d6e  ") and lines[2].endswith(" 1  (no prompt)")
    assert lines[3].startswith("  c0ffee00  ") and lines[3].endswith(" 4  fork of 1f3a9c2e: Fix the add test")


def test_the_help_lists_every_key_and_command() -> None:
    text = render(help_block(), 100)
    for key, _ in (*KEYS, *PLAN_KEYS, *COMMANDS):
        assert f"  {key}" in text
