"""Recording real aerix requests for ``bench_vs_servers.py``, and the floor of a replay.

``record`` runs ``aerix -p`` requests on the embedded model through a pool, with a proxy on the
socket between them: before each ``generate`` goes through, the proxy reads that context's
segments on a side connection (``context.get``) and keeps them with the request's fields. The
pool's member is either the model itself (its own answers) or, for the request with two
delegated pieces (``_two_pieces.py``), the model under ``--engine scripted --script-prefill``
(every row computed by the model, the answers from a script).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from caldrix.engine_seam import ServingFlags
from caldrix.protocol.framing import FrameDecoder, NeedMore, encode_frame
from tests.caldrix.pool_harness import RawConnection, start_pool
from tests.default_model import DEFAULT_MODEL_NAME, default_model_path

ROOT = Path(__file__).resolve().parents[1]
AERIX = str(Path(sys.executable).with_name("aerix"))
RECORDING = ROOT / "benchmarks" / "recordings" / "aerix_request.json"
#: The window every setup gets; the recorded requests fit it.
WINDOW = 4096
#: Pieces of one turn run one at a time while recording, so the recorded order (and the
#: tool output a later piece sees of an earlier one's files) is the same every time; the
#: replay sends the generations one at a time in that order either way.
RECORDING_PARALLEL = 1


def record(prompts: list[str], max_turns: int, script: list[Any] | None = None) -> dict[str, Any]:
    """Real ``aerix -p`` requests (the later ones ``--continue`` the session) through a
    recording proxy; returns the recording (:func:`write_recording` keeps it). With ``script``,
    the model computes every row and the answers come from the script."""
    work = Path(tempfile.mkdtemp(prefix="bench-vs-servers-"))
    scripted: list[str] = []
    if script is not None:
        (work / "script.json").write_text(json.dumps(script))
        scripted = ["--engine", "scripted", "--script-prefill", "--script", str(work / "script.json")]
    pool = start_pool(
        work, "--load", DEFAULT_MODEL_NAME, *scripted, "--ctx", str(WINDOW), "--idle-timeout", "0"
    )
    generations: list[dict[str, Any]] = []
    proxy_path = work / "proxy.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.fspath(proxy_path))
    listener.listen()
    side = RawConnection(pool.socket_path, "cbor")
    side.hello()
    threading.Thread(
        target=_serve_proxy, args=(listener, pool.socket_path, side, generations), daemon=True
    ).start()
    project = _scratch_project(work / "project")
    settings = {
        "pool": {"socket": str(proxy_path), "main": DEFAULT_MODEL_NAME, "main_flags": {"ctx": WINDOW}},
        "delegation": {"parallel": RECORDING_PARALLEL},
    }
    env = _aerix_env(work, settings)
    outcomes: list[str] = []
    try:
        for number, prompt in enumerate(prompts):
            resume = ["--continue"] if number else []
            limits = ["--max-turns", str(max_turns), "--output-format", "json"]
            done = subprocess.run(
                [AERIX, "-p", prompt, *resume, *limits, "--cwd", str(project)],
                env=env,
                capture_output=True,
                text=True,
                timeout=3600,
            )
            outcome = json.loads(done.stdout).get("outcome") if done.stdout.strip() else None
            outcomes.append(str(outcome or f"exit {done.returncode}"))
        changed = subprocess.run(
            ["git", "-C", str(project), "status", "--porcelain"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
    finally:
        pool.stop()
        shutil.rmtree(work, ignore_errors=True)
    return {
        "model": DEFAULT_MODEL_NAME,
        "prompts": prompts,
        "outcomes": outcomes,
        "answers": "scripted; every row computed by the model" if script is not None else "the model's own",
        "changed_files": changed,
        "script": script,
        "generations": generations,
    }


def write_recording(recording: dict[str, Any]) -> None:
    RECORDING.parent.mkdir(parents=True, exist_ok=True)
    RECORDING.write_text(json.dumps(recording, indent=1) + "\n")
    generations, requests = len(recording["generations"]), len(recording["prompts"])
    outcomes = recording["outcomes"]
    print(f"recorded {generations} generations of {requests} request(s) ({outcomes}) in {RECORDING}")


def _scratch_project(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "greet.py").write_text('def greet(name):\n    return f"Hello, {name}!"\n')
    (path / "AGENTS.md").write_text("Keep changes small. Run the tests with python -m pytest.\n")
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.name=b", "-c", "user.email=b@b.invalid", "commit", "-qm", "x"],
    ):
        subprocess.run(["git", "-C", str(path), *args], check=True)
    return path


def _aerix_env(work: Path, settings: dict[str, Any]) -> dict[str, str]:
    env = dict(os.environ)
    for var in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"):
        (work / var.lower()).mkdir(parents=True, exist_ok=True)
        env[var] = str(work / var.lower())
    env["CLAUDE_CONFIG_DIR"] = str(work / "claude")
    (work / "xdg_config_home" / "aerix").mkdir(parents=True)
    (work / "xdg_config_home" / "aerix" / "settings.json").write_text(json.dumps(settings))
    return env


def _serve_proxy(
    listener: socket.socket, upstream: Path, side: RawConnection, generations: list[dict[str, Any]]
) -> None:
    """Forward every connection to ``upstream``; before each ``generate`` is forwarded, read
    that context's segments on the ``side`` connection and record them with the request."""
    lock = threading.Lock()
    rids = iter(range(1, 1 << 30))

    def segments_of(context: str) -> dict[str, Any]:
        with lock:
            rid = next(rids)
            side.send({"op": "context.get", "rid": rid, "context": context})
            return side.receive()

    def client_to_pool(client: socket.socket, pool: socket.socket) -> None:
        decoder = FrameDecoder("cbor")
        while data := client.recv(65536):
            decoder.feed(data)
            while not isinstance(message := decoder.next_message(), NeedMore):
                if message.get("op") == "generate":
                    described = segments_of(str(message["context"]))
                    fields = {k: v for k, v in message.items() if k not in ("op", "rid", "context")}
                    generations.append(
                        {"member": described.get("member"), "segments": described["segments"], **fields}
                    )
                pool.sendall(encode_frame(message, "cbor"))
        pool.shutdown(socket.SHUT_WR)

    def pool_to_client(pool: socket.socket, client: socket.socket) -> None:
        while data := pool.recv(65536):
            client.sendall(data)
        client.close()

    while True:
        client, _ = listener.accept()
        pool = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        pool.connect(os.fspath(upstream))
        threading.Thread(target=client_to_pool, args=(client, pool), daemon=True).start()
        threading.Thread(target=pool_to_client, args=(pool, client), daemon=True).start()


def prompt_tokens(generations: list[dict[str, Any]]) -> tuple[list[list[int]], list[list[int] | None]]:
    """Each generation's prompt as caldrix renders it (the model's own template and tokens) and,
    for one whose output was appended, its prompt's segments followed by that output as the
    next recorded context holds it: the rows its decode computed."""
    from caldrix.engines.llamacpp import open_llamacpp
    from caldrix.generation.templates import render_context

    engine = open_llamacpp(default_model_path(), ServingFlags(ctx=WINDOW, threads=1))
    try:
        prompts = [render_context(engine, g["segments"]).prompt_tokens for g in generations]
        decoded: list[list[int] | None] = []
        for number, generation in enumerate(generations):
            output = _appended_output(generations, number)
            if output is None:
                decoded.append(None)
                continue
            rendered = render_context(engine, [*generation["segments"], output])
            decoded.append([t for tokens in rendered.segment_tokens for t in tokens])
        return prompts, decoded
    finally:
        engine.close()


def _appended_output(generations: list[dict[str, Any]], number: int) -> dict[str, Any] | None:
    append = generations[number].get("append")
    if not append:
        return None
    for later in generations[number + 1 :]:
        for segment in later["segments"]:
            if segment["id"] == append["id"]:
                return dict(segment)
    return None


def floor_rows(prompts: list[list[int]], decoded: list[list[int] | None]) -> int:
    """The rows a replay must prefill at the least: each distinct (prefix, token) of every
    prompt computed once (the nodes of a trie over the prompts), where the rows an earlier
    generation computed while decoding its appended output count as computed already."""
    root: dict[int, Any] = {}
    nodes = 0
    for prompt, output in zip(prompts, decoded, strict=True):
        nodes += _insert(root, prompt)
        if output is not None:
            _insert(root, output)
    return nodes


def _insert(root: dict[int, Any], tokens: list[int]) -> int:
    """Put ``tokens`` into the trie; returns how many nodes were new."""
    node, new = root, 0
    for token in tokens:
        if token not in node:
            node[token] = {}
            new += 1
        node = node[token]
    return new
