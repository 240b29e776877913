"""The Claude Code benchmark's own parts, without a server: its recording loads as the replay
reads it (main-agent and subagent requests alternating, each asking one token once
replayed), and the floor and the ratios it reports are the right arithmetic."""

from __future__ import annotations

from tests.benchmark_modules import load_benchmark

bench = load_benchmark("bench_claude_front")


def test_the_recording_holds_claude_codes_requests_with_a_subagent_between_main_ones() -> None:
    recording = bench.load_recording()
    requests = recording["requests"]
    agents = [bench.agent_of(r) for r in requests]
    assert agents[0] == "main" and agents[-1] == "main"
    first_subagent = agents.index("subagent")
    assert "main" in agents[first_subagent:]  # the main agent goes on after its subagent
    for request in requests:
        body = request["body"]
        assert request["path"] == "/v1/messages" and body["stream"] is True
        assert body["system"][0]["text"].startswith("x-anthropic-billing-header:")
        assert "x-api-key" not in request["headers"] and "authorization" not in request["headers"]
    assert len(requests[0]["body"]["tools"]) > 5  # Claude Code's own tool table


def test_replayed_bodies_ask_one_token_unless_told_and_are_otherwise_as_sent() -> None:
    recording = bench.load_recording()
    for tokens, bodies in ((1, bench.replayed_bodies(recording)), (64, bench.replayed_bodies(recording, 64))):
        for request, body in zip(recording["requests"], bodies, strict=True):
            assert body["max_tokens"] == tokens
            assert {k: v for k, v in body.items() if k != "max_tokens"} == {
                k: v for k, v in request["body"].items() if k != "max_tokens"
            }


def test_the_floor_counts_each_distinct_prefix_once() -> None:
    prompts = [[1, 2, 3], [1, 2, 4], [1, 2, 3, 5], [7]]
    assert bench.floor_rows(prompts, [None] * len(prompts)) == 3 + 1 + 1 + 1


def test_the_report_divides_by_the_floor_and_by_each_other_setup() -> None:
    best = bench.Run(
        "(a) best", [bench.Reply(100, 100, 2.0), bench.Reply(110, 5, 1.0)], wall_s=4.0, floor=100
    )
    peer = bench.Run("(b) peer", [bench.Reply(40, 40, 4.0), bench.Reply(45, 42, 8.0)], wall_s=16.0, floor=100)
    text = bench.report({"claude_code": "2.1"}, ["main", "subagent"], [best, peer], threads=1)
    assert "| 1 | main | 100/100, 2.0 s | 40/40, 4.0 s |" in text
    assert "| (a) best | 210 | 105 | 1.05× | 3.0 | 4.0 |" in text
    assert "| (b) peer | 85 | 82 | 0.82× | 12.0 | 16.0 |" in text
    assert "- (b) peer: 1.28× rows, 0.25× TTFT, 0.25× wall" in text


def test_a_run_cut_short_is_reported_with_what_it_measured() -> None:
    best = bench.Run(
        "(a) best", [bench.Reply(100, 100, 2.0), bench.Reply(110, 5, 1.0)], wall_s=4.0, floor=100
    )
    cut = bench.Run(
        "(b) peer", [bench.Reply(40, 40, 4.0)], wall_s=5.0, floor=100, cut="cut after 1 request(s): gone"
    )
    text = bench.report({"claude_code": "2.1"}, ["main", "subagent"], [best, cut], threads=1)
    assert "| 2 | subagent | 5/110, 1.0 s | — |" in text
    assert "| (b) peer (cut after 1 request(s): gone) | 40 | 40 | 0.40× | 4.0 | 5.0 |" in text


def test_setups_are_named_by_their_keys_and_an_unknown_one_is_one_line() -> None:
    assert bench._setups("a,bt", bench.SETUPS) == ["a", "bt"]
    assert bench._setups("b", bench.RAMBLE_SETUPS) == ["b"]
    for wrong in ("a,zz", ",", "bt"):
        known = bench.RAMBLE_SETUPS if wrong == "bt" else bench.SETUPS
        try:
            bench._setups(wrong, known)
        except SystemExit as refused:
            assert (
                str(refused) == f"bench_claude_front: --setups takes some of {','.join(known)}, not {wrong!r}"
            )
        else:
            raise AssertionError(f"{wrong!r} was taken")


def test_each_setup_is_divided_by_the_floor_of_its_own_prompts() -> None:
    """(ab)'s prompts are shorter (brief tools): its rows against its own floor, not (a)'s."""
    brief = bench.Run("(ab) brief", [bench.Reply(50, 50, 1.0)], wall_s=1.0, floor=50)
    full = bench.Run("(a) full", [bench.Reply(100, 100, 2.0)], wall_s=2.0, floor=100)
    text = bench.report({"claude_code": "2.1"}, ["main"], [brief, full], threads=1)
    assert "| (ab) brief | 50 | 50 | 1.00× |" in text and "| (a) full | 100 | 100 | 1.00× |" in text
    assert "50 rows (brief), 100 rows." in text
