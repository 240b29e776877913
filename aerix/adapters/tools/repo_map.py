"""repo_map: the file tree with sizes and languages, computed once per request."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path, PurePosixPath

from aerix.adapters.tools.file_set import list_files

#: File name suffix (or whole name) -> language, for the map's labels.
LANGUAGES: dict[str, str] = {
    ".py": "Python",
    ".pyi": "Python",
    ".rs": "Rust",
    ".go": "Go",
    ".js": "JavaScript",
    ".mjs": "JavaScript",
    ".cjs": "JavaScript",
    ".jsx": "JavaScript",
    ".ts": "TypeScript",
    ".tsx": "TypeScript",
    ".java": "Java",
    ".kt": "Kotlin",
    ".c": "C",
    ".h": "C",
    ".cc": "C++",
    ".cpp": "C++",
    ".hpp": "C++",
    ".cs": "C#",
    ".rb": "Ruby",
    ".php": "PHP",
    ".swift": "Swift",
    ".scala": "Scala",
    ".lua": "Lua",
    ".sh": "Shell",
    ".bash": "Shell",
    ".zsh": "Shell",
    ".md": "Markdown",
    ".rst": "reStructuredText",
    ".txt": "Text",
    ".json": "JSON",
    ".jsonl": "JSON",
    ".toml": "TOML",
    ".yaml": "YAML",
    ".yml": "YAML",
    ".ini": "INI",
    ".cfg": "INI",
    ".html": "HTML",
    ".css": "CSS",
    ".scss": "CSS",
    ".sql": "SQL",
    ".xml": "XML",
    ".proto": "Protobuf",
    ".zig": "Zig",
    ".hs": "Haskell",
    ".ml": "OCaml",
    ".ex": "Elixir",
    ".exs": "Elixir",
    ".erl": "Erlang",
    ".clj": "Clojure",
    ".r": "R",
    ".jl": "Julia",
    ".dart": "Dart",
    ".vue": "Vue",
    ".svelte": "Svelte",
    ".tf": "Terraform",
    ".nix": "Nix",
    ".gguf": "GGUF model",
    "Makefile": "Make",
    "Dockerfile": "Dockerfile",
    "CMakeLists.txt": "CMake",
}


def language_of(name: str) -> str | None:
    """The language label of a file name, or None."""
    base = PurePosixPath(name).name
    return LANGUAGES.get(base) or LANGUAGES.get(PurePosixPath(base).suffix.lower())


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024 or unit == "MiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def build_repo_map(root: Path) -> str:
    """The map of every file under ``root`` (the git file set in a repository)."""
    names = list_files(root)
    sizes = {name: _size(root / name) for name in names}
    languages = Counter(lang for name in names if (lang := language_of(name)))
    summary = ", ".join(f"{lang} {count}" for lang, count in languages.most_common())
    lines = [
        f"{root}: {len(names)} files, {human_size(sum(sizes.values()))}" + (f"; {summary}" if summary else "")
    ]
    shown_dirs: set[tuple[str, ...]] = set()
    for name in names:
        parts = tuple(name.split("/"))
        for depth in range(len(parts) - 1):
            folder = parts[: depth + 1]
            if folder not in shown_dirs:
                shown_dirs.add(folder)
                lines.append(f"{'  ' * depth}{folder[-1]}/")
        label = language_of(name)
        lines.append(
            f"{'  ' * (len(parts) - 1)}{parts[-1]}  {human_size(sizes[name])}"
            + (f"  {label}" if label else "")
        )
    return "\n".join(lines)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class RepoMapCache:
    """Maps computed once per request: the loop makes one cache per request and keeps it."""

    def __init__(self) -> None:
        self._maps: dict[Path, str] = {}
        self._lock = threading.Lock()

    def get(self, root: Path) -> str:
        with self._lock:
            cached = self._maps.get(root)
        if cached is None:
            cached = build_repo_map(root)
            with self._lock:
                cached = self._maps.setdefault(root, cached)
        return cached
