"""The interactive screen end to end: the real ``aerix`` console script in a real terminal
(tmux), over the real pool daemon with a scripted main member, in a temporary git repository.

The steps run in order, one test each, on one screen: open, a prompt with a tool call and its
final, a plan accepted, a plan edited in $EDITOR, a plan aborted, Esc while a command runs, a
prompt queued behind a running one, /clear and /resume, a resize, quit, a launch resuming
the session, and one quit before any prompt (no session branch left in the profile). Each step
is read back with ``capture-pane``; the script's completions are taken in the order the steps
ask for generations (routing takes one, each turn one).
"""

from __future__ import annotations

import json
import os
import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aerix.cli.screen import NEEDS_A_TERMINAL
from aerix.domain.bounds import EXIT_USAGE
from aerix.domain.profile import SHORT_COMMIT_CHARS
from tests.aerix.profile_world import git
from tests.aerix.request_world import (
    AERIX,
    World,
    aerix,
    make_project,
    make_world,
    session_events,
    start_scripted_pool,
)
from tests.aerix.tmux_terminal import POLL_SECS, SHOW_DEADLINE_SECS, Tmux

pytestmark = [pytest.mark.e2e]

WIDTH, HEIGHT = 100, 50


def turn(thought: str, *calls: tuple[str, dict[str, Any]]) -> str:
    return json.dumps({"thought": thought, "calls": [{"tool": tool, "input": args} for tool, args in calls]})


def final(thought: str, text: str) -> str:
    return json.dumps({"thought": thought, "final": text})


def plan_write(text: str) -> str:
    return turn("Plan first.", ("plan", {"op": "write", "text": text}))


SCRIPT = [
    # a prompt with a tool call and a final
    "answer",
    turn("Look around.", ("bash", {"command": "echo hello-from-the-tool"})),
    turn("Look again.", ("bash", {"command": "echo hello-from-the-tool"})),
    final("Done.", "The project has **one** file."),
    # a plan accepted
    "plan",
    plan_write("1. step one\n2. step two"),
    final("Ok.", "Planned A."),
    # a planner that handed nothing out is answered once with a note: its second final stands
    final("Ok.", "Planned A."),
    # a plan edited
    "plan",
    plan_write("1. the old step"),
    final("Ok.", "Planned B."),
    final("Ok.", "Planned B."),
    # a plan aborted: no turn after it
    "plan",
    plan_write("1. a doomed step"),
    # Esc while a command runs: no turn after it
    "answer",
    turn("Wait.", ("bash", {"command": "echo $$ > sleeper.pid; sleep 300"})),
    # a prompt queued behind a running one
    "answer",
    turn("Hold.", ("bash", {"command": "while [ ! -f go ]; do sleep 0.1; done; echo released"})),
    final("Ok.", "First done."),
    "answer",
    final("Ok.", "Second done."),
    # a skill by tab completion, then a paste of two lines
    "answer",
    final("Ok.", "Greeted."),
    "answer",
    final("Ok.", "Pasted."),
    # after /clear and /resume
    "answer",
    final("Ok.", "Resumed fine."),
    # after quitting, `aerix --continue "one more"`
    "answer",
    final("Ok.", "Continued fine."),
    # a plan edited inline (no $EDITOR in that screen's environment)
    "plan",
    plan_write("1. inline step"),
    final("Ok.", "Planned D."),
    final("Ok.", "Planned D."),
    # `aerix -p` with stderr on the terminal: the status line while a command holds the request
    "answer",
    turn("Hold.", ("bash", {"command": "while [ ! -f go ]; do sleep 0.1; done; echo released"})),
    final("Ok.", "Headless done."),
    # `aerix "a prompt"` without a terminal runs it as -p does, stderr a pipe
    "answer",
    final("Ok.", "Plain done."),
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("screen")
    world = make_world(root, {"pool": {"socket": str(root / "run" / "pool.sock")}})
    pool = start_scripted_pool(world, world.socket, SCRIPT)
    editor = root / "editor.sh"
    editor.write_text("#!/bin/sh\nprintf '1. the edited step\\n' > \"$1\"\n")
    editor.chmod(0o755)
    world.env["EDITOR"] = str(editor)
    world.env.pop("VISUAL", None)
    try:
        yield world
    finally:
        pool.terminate()
        pool.wait(timeout=60)


@pytest.fixture(scope="module")
def project(world: World) -> Path:
    project = make_project(world.root / "proj", {"README.md": "# Demo\n"})
    skill = project / ".claude" / "skills" / "greet" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\ndescription: Greets someone\n---\nSay hello to $ARGUMENTS.\n")
    return project


@pytest.fixture(scope="module")
def tmux(world: World, project: Path) -> Iterator[Tmux]:
    assert Tmux.available(), "tmux is needed for the screen's tests (scripts/setup installs it)"
    terminal = Tmux(server=f"aerix-test-{os.getpid()}", stderr=world.root / "screen.stderr")
    env = {k: v for k, v in world.env.items() if k.startswith(("XDG_", "CLAUDE_", "EDITOR", "PATH", "HOME"))}
    env["TERM"] = "tmux-256color"
    terminal.start([AERIX], project, env, WIDTH, HEIGHT)
    try:
        # Keys typed before the editor runs would race the startup (a busy CPU opens it later).
        terminal.wait_for("✓ ready in")
        yield terminal
    finally:
        terminal.stop()


def wait_for_file(path: Path) -> str:
    deadline = time.monotonic() + SHOW_DEADLINE_SECS
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} never written"
        time.sleep(POLL_SECS)
    return path.read_text()


def only_session(world: World) -> str:
    logs = [path for path in world.sessions.glob("*/*.jsonl") if not path.name.endswith(".claude.jsonl")]
    [log] = sorted(logs, key=lambda path: path.stat().st_mtime)[-1:]  # not a transcript beside it
    return log.stem


def test_open_shows_the_frame_and_ready_and_question_mark_the_keys(tmux: Tmux) -> None:
    shown = tmux.wait_for("✓ ready in")
    assert "▟███▙" in shown and "▄███▄  ███████" in shown  # the peak beside the wordmark at 100
    assert "smollm2-135m · cpu · 4,096 tokens" in shown
    assert "pool     smollm2-135m · cpu lane" in shown
    assert "profile  default · model/smollm2-135m · " in shown and " tuned" in shown
    assert "session  " in shown and " new" in shown
    tmux.type("?")
    shown = tmux.wait_for("at a plan")
    assert "  ctrl-j, \\ enter" in shown and "  /resume [ID]" in shown


def test_a_prompt_shows_its_tool_line_and_final(tmux: Tmux) -> None:
    tmux.type("What is here?")
    tmux.keys("Enter")
    shown = tmux.wait_for("The project has one file.")
    assert "› What is here?" in shown
    assert "● Look around." in shown
    assert "⎿ bash echo hello-from-the-tool → exit 0 · 1 line" in shown
    assert "⎿ bash echo hello-from-the-tool → unchanged since c1 · not run again" in shown
    # The finished lines are printed above the live region, which is drawn again after them:
    # the screen can show the stats before the context line comes back.
    shown = tmux.wait_until(lambda shown: "tok/s" in shown and " / 4,096 tokens" in shown, "the context line")
    assert "context " in shown


def test_a_plan_waits_and_enter_accepts_it(tmux: Tmux, world: World) -> None:
    tmux.type("Plan A")
    tmux.keys("C-j")  # a second line in the same prompt
    tmux.type("carefully")
    tmux.keys("Enter")
    shown = tmux.wait_for("plan waiting · enter accept · e edit · esc abort")
    assert "1. step one" in shown and "Planned A." not in shown
    tmux.keys("Enter")
    shown = tmux.wait_for("Planned A.")
    assert "plan accepted" in shown
    events = session_events(world, only_session(world))
    plans = [e for e in events if e["type"] == "plan"]
    assert plans[-1]["gate"] == "accepted" and plans[-1]["text"] == "1. step one\n2. step two"
    assert [e for e in events if e["type"] == "session.start"][-1]["prompt"] == "Plan A\ncarefully"


def test_e_edits_the_plan_in_the_editor(tmux: Tmux, world: World) -> None:
    before = tmux.mark()
    tmux.type("Plan B")
    tmux.keys("Enter")
    tmux.wait_for("plan waiting", since=before)
    tmux.keys("e")
    shown = tmux.wait_for("Planned B.", since=before)
    assert "plan edited" in tmux.new_part(shown, before) and "1. the edited step" in tmux.new_part(
        shown, before
    )
    plans = [e for e in session_events(world, only_session(world)) if e["type"] == "plan"]
    assert plans[-1]["gate"] == "edited"
    assert plans[-1]["text"] == "1. the edited step\n" and plans[-1]["proposed"] == "1. the old step"
    # the model was told: its plan result carries the user's version
    results = [e for e in session_events(world, only_session(world)) if e.get("tool") == "plan"]
    assert "the user edited your plan" in results[-1]["text"]


def test_esc_at_the_plan_aborts_the_request(tmux: Tmux, world: World) -> None:
    before = tmux.mark()
    tmux.type("Plan C")
    tmux.keys("Enter")
    tmux.wait_for("plan waiting", since=before)
    tmux.keys("Escape")
    shown = tmux.wait_for("cancelled · plan aborted at the gate", since=before)
    assert "plan aborted" in tmux.new_part(shown, before)
    events = session_events(world, only_session(world))
    assert events[-1]["type"] == "session.end" and events[-1]["outcome"] == "cancelled"
    assert [e for e in events if e["type"] == "plan"][-1]["gate"] == "aborted"


def test_esc_cancels_a_running_command(tmux: Tmux, world: World, project: Path) -> None:
    before = tmux.mark()
    tmux.type("Run something long")
    tmux.keys("Enter")
    tmux.wait_for("⎿ bash echo $$ > sleeper.pid; sleep 300 …", since=before)
    pid_file = project / "sleeper.pid"
    pid = int(wait_for_file(pid_file))
    tmux.keys("Escape")
    shown = tmux.wait_for("cancelled · cancelled", since=before)
    assert "⎿ bash echo $$ > sleeper.pid; sleep 300 → cancelled" in tmux.new_part(shown, before)
    with pytest.raises(ProcessLookupError):  # its process group was killed
        os.kill(pid, 0)
    events = session_events(world, only_session(world))
    assert events[-1]["type"] == "session.end" and events[-1]["outcome"] == "cancelled"
    pid_file.unlink()


def test_a_prompt_typed_while_one_runs_is_queued_and_runs_next(tmux: Tmux, project: Path) -> None:
    before = tmux.mark()
    tmux.type("First")
    tmux.keys("Enter")
    tmux.wait_for("⎿ bash while [ ! -f go ]", since=before)
    tmux.type("Second")
    tmux.keys("Enter")
    shown = tmux.wait_for("1 queued", since=before)
    assert "queued Second" in tmux.new_part(shown, before)
    (project / "go").write_text("")
    shown = tmux.wait_for("Second done.", since=before)
    tail = tmux.new_part(shown, before)
    assert tail.index("First done.") < tail.index("› Second") < tail.index("Second done.")
    (project / "go").unlink()


def test_tab_completes_a_skill_whose_text_becomes_the_prompt(tmux: Tmux, world: World) -> None:
    before = tmux.mark()
    tmux.type("/gr")
    tmux.wait_for("/greet", since=before)  # the completion menu
    tmux.keys("Tab")
    tmux.type(" the team")
    tmux.keys("Enter")
    shown = tmux.wait_for("Greeted.", since=before)
    assert "› /greet the team" in tmux.new_part(shown, before)
    events = session_events(world, only_session(world))
    prompt = [e for e in events if e["type"] == "segment" and e["kind"] == "prompt"][-1]
    assert "Say hello to the team." in prompt["text"]


def test_a_paste_of_two_lines_is_one_prompt(tmux: Tmux, world: World) -> None:
    before = tmux.mark()
    tmux.paste("line one\nline two")
    tmux.keys("Enter")
    shown = tmux.wait_for("Pasted.", since=before)
    assert "› line one\nline two" in tmux.new_part(shown, before)
    starts = [e for e in session_events(world, only_session(world)) if e["type"] == "session.start"]
    assert starts[-1]["prompt"] == "line one\nline two"


def test_clear_then_resume_picks_the_session_back(tmux: Tmux, world: World) -> None:
    session = only_session(world)
    before = tmux.mark()
    tmux.type("/cle")
    tmux.wait_for("/clear", since=before)  # the completion menu
    tmux.keys("Tab")
    tmux.keys("Enter")
    tmux.wait_for(" new", since=before)
    tmux.type("/resume")
    tmux.keys("Enter")
    shown = tmux.wait_for("resume which session?", since=before)
    assert f"› {session[:8]}" in tmux.new_part(shown, before)
    tmux.keys("Enter")
    tmux.wait_for(f"session {session} resumed", since=before)
    tmux.type("Still there?")
    tmux.keys("Enter")
    tmux.wait_for("Resumed fine.", since=before)
    starts = [e for e in session_events(world, session) if e["type"] == "session.start"]
    assert starts[-1]["resumed"] is True and starts[-1]["prompt"] == "Still there?"


def test_a_resize_draws_the_frame_again_at_the_new_width(tmux: Tmux) -> None:
    # The whole redraw: the frame at the new width, the transcript under it, the old frame gone.
    tmux.resize(64, HEIGHT)
    tmux.wait_until(
        lambda shown: "│  ▄███▄  ███████" in shown and "Resumed fine." in shown and "▟███▙" not in shown,
        "the wordmark alone at 64 columns over the transcript",
    )
    tmux.resize(40, HEIGHT)
    tmux.wait_until(
        lambda shown: "│ aerix " in shown and "Resumed fine." in shown and "███████" not in shown,
        "the word alone at 40 columns over the transcript",
    )
    tmux.resize(WIDTH, HEIGHT)
    tmux.wait_for("▟███▙")


def test_ctrl_d_quits_and_the_prompts_are_in_the_projects_history(tmux: Tmux, world: World) -> None:
    tmux.keys("C-d")
    shown = tmux.wait_for("SCREEN-EXITED 0")
    assert f"aerix --resume {only_session(world)}" in shown
    [history] = (world.root / "state" / "aerix" / "history").iterdir()
    kept = history.read_text()
    assert "+What is here?" in kept and "+line one\n+line two" in kept


def test_continue_opens_the_session_resumed_with_a_first_prompt(world: World, project: Path) -> None:
    session = only_session(world)
    terminal = Tmux(server=f"aerix-test-{os.getpid()}-2", stderr=world.root / "screen2.stderr")
    env = {k: v for k, v in world.env.items() if k.startswith(("XDG_", "CLAUDE_", "PATH", "HOME"))}
    terminal.start([AERIX, "--continue", "one more"], project, env, WIDTH, HEIGHT)
    try:
        shown = terminal.wait_for("Continued fine.")
        # The frame's info line wraps where the project's path is long (an xdist worker's temporary
        # folder is): read the frame's rows as one line.
        frame = " ".join(line.strip("│ ") for line in shown.splitlines() if line.startswith("│"))
        assert "· resumed" in frame and f"session  {session} resumed" in shown
        assert "› one more" in shown
        before = terminal.mark()
        terminal.keys("Up")  # the project's history: the last prompt of the screen before
        terminal.wait_for("› Still there?", since=before)
        terminal.keys("C-c")  # clears the prompt
        before = terminal.mark()
        terminal.type("Plan D")
        terminal.keys("Enter")
        terminal.wait_for("plan waiting", since=before)
        terminal.keys("e")  # no $EDITOR here: the plan comes into the prompt
        terminal.wait_for("editing the plan", since=before)
        terminal.type(", then check")
        terminal.keys("Enter")
        shown = terminal.wait_for("Planned D.", since=before)
        assert "1. inline step, then check" in terminal.new_part(shown, before)
        plans = [e for e in session_events(world, session) if e["type"] == "plan"]
        assert (plans[-1]["gate"], plans[-1]["text"]) == ("edited", "1. inline step, then check")
        terminal.keys("C-c")
        terminal.wait_for("ctrl-c again to exit")
        terminal.keys("C-c")
        terminal.wait_for("SCREEN-EXITED 0")
    finally:
        terminal.stop()


def test_print_mode_shows_the_status_line_on_a_terminals_stderr(world: World, project: Path) -> None:
    terminal = Tmux(server=f"aerix-test-{os.getpid()}-3", stderr=world.root / "unused.stderr")
    out = world.root / "headless.out"
    env = {k: v for k, v in world.env.items() if k.startswith(("XDG_", "CLAUDE_", "PATH", "HOME"))}
    script = f"{shlex.quote(AERIX)} -p 'Hold on' > {shlex.quote(str(out))}; echo HEADLESS-EXITED $?"
    terminal.start(["sh", "-c", script], project, env, WIDTH, HEIGHT, stderr_to_terminal=True)
    try:
        shown = terminal.wait_for("1 tool call")
        status = next(line for line in shown.splitlines() if "1 tool call" in line)
        assert "turn 1/40" in status and "context " in status
        (project / "go").write_text("")
        shown = terminal.wait_for("HEADLESS-EXITED 0")
        assert "1 tool call" not in shown  # the line was cleared at the end
        assert out.read_text().startswith("Headless done.")
    finally:
        terminal.stop()
        (project / "go").unlink(missing_ok=True)


def test_without_a_terminal_a_prompt_runs_plainly_and_bare_aerix_says_to_use_p(
    world: World, project: Path
) -> None:
    done = aerix(world, project, "Say it plainly")
    assert done.returncode == 0 and done.stdout.startswith("Plain done.")
    assert "\r" not in done.stderr and "\x1b" not in done.stderr  # no status line into a pipe
    assert done.stderr.count("\n") >= 1 and "aerix 0.1.0 · smollm2-135m" in done.stderr  # the one-line banner
    bare = aerix(world, project)
    assert bare.returncode == EXIT_USAGE
    assert bare.stderr.strip() == f"aerix: {NEEDS_A_TERMINAL}"


def test_quitting_before_any_prompt_leaves_no_session_branch_in_the_profile(
    world: World, project: Path
) -> None:
    """The startup block shows the commit the session will read, but only a request makes its
    ``session/<id>`` branch: a screen opened and quit leaves no branch without a session log."""
    profile = world.root / "data" / "aerix" / "profiles" / "default.git"
    terminal = Tmux(server=f"aerix-test-{os.getpid()}-5", stderr=world.root / "screen5.stderr")
    env = {k: v for k, v in world.env.items() if k.startswith(("XDG_", "CLAUDE_", "PATH", "HOME"))}
    terminal.start([AERIX], project, env, WIDTH, HEIGHT)
    try:
        shown = terminal.wait_for("✓ ready in")
        [session] = [line.split()[1] for line in shown.splitlines() if line.startswith("session  ")]
        [row] = [line for line in shown.splitlines() if line.startswith("profile  ")]
        base = git(profile, "rev-parse", "model/smollm2-135m").strip()
        assert row.split(" · ")[2] == base[:SHORT_COMMIT_CHARS]  # the commit is shown all the same
        terminal.keys("C-d")
        shown = terminal.wait_for("SCREEN-EXITED 0")
        assert "aerix --resume" not in shown  # no request, no session to resume
    finally:
        terminal.stop()
    branches = git(profile, "for-each-ref", "--format=%(refname:short)", "refs/heads/session/").split()
    assert branches and f"session/{session}" not in branches  # the earlier screens' sessions made theirs
    assert not list(world.sessions.glob(f"*/{session}*"))


def test_a_session_that_cannot_be_opened_is_one_error_row_and_exit_1(world: World, project: Path) -> None:
    terminal = Tmux(server=f"aerix-test-{os.getpid()}-4", stderr=world.root / "screen4.stderr")
    env = {k: v for k, v in world.env.items() if k.startswith(("XDG_", "CLAUDE_", "PATH", "HOME"))}
    terminal.start([AERIX, "--resume", "no-such-session"], project, env, WIDTH, HEIGHT)
    try:
        shown = terminal.wait_for("SCREEN-EXITED 1")
        [error] = [line for line in shown.splitlines() if line.startswith("✗ ")]
        assert "no-such-session" in error
        assert "Traceback" not in shown and not (world.root / "screen4.stderr").read_text().strip()
    finally:
        terminal.stop()
