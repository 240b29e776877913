"""Top-level definitions a whole-file write left out, put back as they were (pure)."""

from __future__ import annotations

from aerix.domain.kept_definitions import top_level_names, with_kept_definitions

STUB = (
    '"""Graphs."""\nNODE, EDGE = range(2)\nLIMIT: int = 3\n\n\n@dataclass\nclass Node:\n    name: str\n\n\n'
    "def helper():\n    return 1\n"
)


def test_names_are_the_top_level_functions_classes_and_assigned_names() -> None:
    assert top_level_names(STUB) == ["NODE", "EDGE", "LIMIT", "Node()", "helper()"]
    assert top_level_names("a.b = 1\nx[0] = 2\nif True:\n    y = 3\n(p, *q) = 1, 2\n") == ["p", "q"]
    assert top_level_names("def broken(:\n") == []


def test_left_out_definitions_come_back_where_they_belong() -> None:
    written = '"""Graphs."""\nimport json\n\n\nclass Graph:\n    pass\n'
    kept = with_kept_definitions(STUB, STUB, written)
    assert kept is not None
    assert kept.names == ("NODE", "EDGE", "LIMIT", "Node()", "helper()")
    assert kept.text == (
        '"""Graphs."""\nimport json\nNODE, EDGE = range(2)\nLIMIT: int = 3\n\n\nclass Graph:\n    pass\n'
        "\n\n@dataclass\nclass Node:\n    name: str\n\n\ndef helper():\n    return 1\n"
    )


def test_what_the_project_never_had_or_the_write_kept_is_not_put_back() -> None:
    added = STUB + "\n\ndef extra():\n    return 2\n"
    assert with_kept_definitions(added, STUB, STUB) is None  # extra() was this work's own
    # A constant that became a function is kept by name.
    renamed = STUB.replace("LIMIT: int = 3\n", "") + "\n\ndef LIMIT():\n    return 3\n"
    assert with_kept_definitions(STUB, STUB, renamed) is None
    assert with_kept_definitions(STUB, STUB, "def broken(:\n") is None
