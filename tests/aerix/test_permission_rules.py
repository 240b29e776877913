"""Claude Code's permission rules as aerix reads them: parsing, Bash specifiers on compound
commands, gitignore-style path patterns, and the policy (tools taken away, calls refused)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aerix.adapters.project.project import ProjectFiles
from aerix.adapters.project.settings_files import (
    SettingsOverrides,
    load_settings,
    parse_disallowed,
    parse_settings,
)
from aerix.domain.permission_rules import RuleError, parse_rule, split_rules
from aerix.domain.permissions import (
    NO_RESTRICTIONS,
    Permissions,
    parse_base_tools,
    rules_from,
)
from aerix.domain.shell_parts import bash_matches, command_candidates
from aerix.domain.tools import TOOL_NAMES, TOOLS
from aerix.errors import SettingsError

ROOT = "/work/proj"
HOME = "/home/me"


def policy(*rules: str, tools: str | None = None) -> Permissions:
    base = parse_base_tools(tools) if tools is not None else NO_RESTRICTIONS.base
    return Permissions(rules_from(rules, "settings.json"), base, ROOT, HOME)


def denied(permissions: Permissions, tool: str, cwd: str = ROOT, **tool_input: object) -> str | None:
    denial = permissions.denial(tool, tool_input, cwd)
    return denial.rule if denial else None


# -- parsing ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tool", "specifier"),
    [
        ("Bash", "bash", None),
        ("  Bash  ", "bash", None),
        ("Bash(*)", "bash", None),
        ("Bash(rm:*)", "bash", "rm:*"),
        ("Bash(git commit -m x)", "bash", "git commit -m x"),
        ('Bash(python -c "print\\(1\\)")', "bash", 'python -c "print(1)"'),
        ("Read(./.env)", "read", "./.env"),
        ("Edit(src/**)", "edit", "src/**"),
        ("Write(//tmp/x)", "write", "//tmp/x"),
        ("Task(reviewer)", "agent", "reviewer"),
        ("Agent(reviewer)", "agent", "reviewer"),
        ("Skill(deploy)", "skill", "deploy"),
        ("WebFetch(domain:example.com)", "web_fetch", "domain:example.com"),
        ("bash(ls *)", "bash", "ls *"),  # aerix's own name
        ("repo_map", "repo_map", None),
        ("NotebookEdit", None, None),  # a tool aerix lacks: kept, denies nothing
        ("mcp__github__create_issue(x)", None, "x"),
    ],
)
def test_a_rule_names_its_tool_and_specifier(text: str, tool: str | None, specifier: str | None) -> None:
    rule = parse_rule(text)
    assert (rule.tool, rule.specifier) == (tool, specifier)
    assert rule.text == text.strip()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "an empty rule"),
        ("   ", "an empty rule"),
        ("Bash(rm", "has no closing ')'"),
        ("Bash(rm) now", "has no closing ')'"),
        ("Bash)", "has a ')' but no '('"),
        ("Bash()", "write Bash to deny every call"),
        ("Bash(  )", "write Bash to deny every call"),
        ("(rm)", "is not a tool name"),
        ("Ba sh", "is not a tool name"),
        ("Ba!sh(rm)", "is not a tool name"),
        ("WebSearch(cats)", "WebSearch takes no specifier"),
        ("repo_map(x)", "repo_map takes no specifier"),
        ("WebFetch(https://x.org)", "names a host, such as WebFetch(domain:example.com)"),
        ("Read(.)", "names no file"),
        ("Read(./)", "names no file"),
    ],
)
def test_an_unreadable_rule_says_what_and_how(text: str, says: str) -> None:
    with pytest.raises(RuleError) as raised:
        parse_rule(text)
    message = str(raised.value)
    assert says in message and "\n" not in message


def test_flag_values_split_on_commas_and_spaces_outside_parentheses() -> None:
    assert split_rules("Bash(git commit -m a, b),Read Edit") == ["Bash(git commit -m a, b)", "Read", "Edit"]
    assert split_rules(" Bash(npm run test:*) , WebFetch ") == ["Bash(npm run test:*)", "WebFetch"]
    assert split_rules("Bash(echo \\(x),Grep") == ["Bash(echo \\(x)", "Grep"]
    assert split_rules("") == []
    assert parse_disallowed(["Bash(rm:*),Read", "Edit"]) == ("Bash(rm:*)", "Read", "Edit")
    with pytest.raises(SettingsError, match=r"^--disallowedTools: 'Bash\(rm' has no closing"):
        parse_disallowed(["Read,Bash(rm"])


# -- Bash -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("specifier", "command", "matches"),
    [
        # the legacy prefix form, on a word boundary
        ("rm:*", "rm -rf build", True),
        ("rm:*", "rm", True),
        ("rm:*", "rmdir x", False),
        ("npm run:*", "npm run test", True),
        ("npm run:*", "npm install", False),
        # wildcards
        ("git * main", "git checkout main", True),
        ("git * main", "git checkout dev", False),
        ("ls *", "ls", True),
        ("ls *", "ls -la /tmp", True),
        ("ls *", "lsof", False),
        ("ls*", "lsof", True),
        ("* --version", "node --version", True),
        ("echo \\*", "echo *", True),
        ("echo \\*", "echo hi", False),
        # exact
        ("npm build", "npm build", True),
        ("npm build", "npm  build ", True),
        ("npm build", "npm build:dev", False),
        # compound commands: any part
        ("rm:*", "echo hi && rm -rf x", True),
        ("rm:*", "ls; rm x", True),
        ("rm:*", "cat f | rm x", True),
        ("rm:*", "false || rm x", True),
        ("rm:*", "sleep 1 & rm x", True),
        ("rm:*", "ls\nrm x", True),
        ("rm:*", "ls 2>&1 | grep x", False),
        # quotes keep a separator inside one command
        ("rm:*", 'echo "a && rm x"', False),
        ("rm:*", "echo 'a; rm x'", False),
        # what runs inside, and what only wraps
        ("rm:*", "echo $(rm x)", True),
        ("rm:*", "echo `rm x`", True),
        ("rm:*", 'echo "$(rm x)"', True),
        ("rm:*", "echo '$(rm x)'", False),
        ("rm:*", "(cd build && rm x)", True),
        ("rm:*", "sh -c 'rm x'", True),
        ("rm:*", '/bin/bash -lc "rm x"', True),
        ("rm:*", "eval rm x", True),
        ("rm:*", "FOO=1 BAR='a b' rm x", True),
        ("rm:*", "timeout -s KILL 5 nice -n 3 nohup rm x", True),
        ("rm:*", "sudo -u root env X=1 rm x", True),
        ("sudo:*", "sudo rm x", True),
        ("rm:*", "/bin/rm -rf x", True),
        ("rm:*", "cd /tmp/rm && ls", False),
        ("git push", "cd repo && git push", True),
    ],
)
def test_bash_specifiers(specifier: str, command: str, matches: bool) -> None:
    assert bash_matches(specifier, command) is matches


def test_a_command_is_checked_whole_and_by_part() -> None:
    candidates = command_candidates("cd a && FOO=1 make test | tee log")
    assert candidates[0] == "cd a && FOO=1 make test | tee log"
    assert {"cd a", "FOO=1 make test", "make test", "tee log"} <= set(candidates)
    assert bash_matches("cd a && FOO=1 make test | tee log", "cd a  &&  FOO=1 make test | tee log")


# -- paths ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "path", "cwd", "matches"),
    [
        ("Read(./.env)", ".env", ROOT, True),
        ("Read(./.env)", f"{ROOT}/.env", "/elsewhere", True),
        ("Read(./.env)", "sub/.env", ROOT, False),
        ("Read(./.env)", ".env.local", ROOT, False),
        ("Read(./.env)", "../.env", f"{ROOT}/sub", True),
        ("Read(.env)", "sub/deep/.env", ROOT, True),  # no slash: any depth, gitignore-style
        ("Read(.env)", "/elsewhere/.env", ROOT, False),  # but under the project root only
        ("Read(*.pem)", "keys/a.pem", ROOT, True),
        ("Read(*.pem)", "keys/a.pem.txt", ROOT, False),
        ("Read(/secrets)", "secrets/a/b.txt", ROOT, True),  # a folder covers what is in it
        ("Read(/secrets)", "lib/secrets", ROOT, False),
        ("Read(secrets/)", "lib/secrets/x", ROOT, True),
        ("Edit(src/**)", "src/a/b.py", ROOT, True),
        ("Edit(src/**)", "lib/src/a.py", ROOT, False),
        ("Edit(src/*.py)", "src/a.py", ROOT, True),
        ("Edit(src/*.py)", "src/a/b.py", ROOT, False),
        ("Edit(src/**/*.py)", "src/a.py", ROOT, True),
        ("Edit(src/**/*.py)", "src/a/b/c.py", ROOT, True),
        ("Edit(**/test_*.py)", "a/b/test_x.py", ROOT, True),
        ("Edit(file?.txt)", "file1.txt", ROOT, True),
        ("Edit(file?.txt)", "file10.txt", ROOT, False),
        ("Edit(file[0-9].txt)", "file7.txt", ROOT, True),
        ("Edit(file[!0-9].txt)", "file7.txt", ROOT, False),
        ("Read(//etc/passwd)", "/etc/passwd", ROOT, True),
        ("Read(//etc/passwd)", f"{ROOT}/etc/passwd", ROOT, False),
        ("Read(//etc)", "/etc/ssh/sshd_config", ROOT, True),
        ("Read(~/.ssh/**)", f"{HOME}/.ssh/id_rsa", ROOT, True),
        ("Read(~/.ssh/**)", f"{ROOT}/.ssh/id_rsa", ROOT, False),
        ("Read(~)", f"{HOME}/notes.txt", ROOT, True),
        ("Read(./a/../.env)", "b/../.env", ROOT, True),  # normalised both sides
        ("Read(//**)", "/anything/at/all", ROOT, True),
    ],
)
def test_path_patterns(rule: str, path: str, cwd: str, matches: bool) -> None:
    assert (
        denied(policy(rule), "read" if rule.startswith("Read") else "edit", cwd, path=path) is not None
    ) is matches


def test_a_read_rule_guards_read_grep_and_glob_and_an_edit_rule_edit_and_write() -> None:
    permissions = policy("Read(./secrets/**)", "Edit(./locked.txt)")
    assert denied(permissions, "read", path="secrets/k") == "Read(./secrets/**)"
    assert denied(permissions, "grep", pattern="x", path="secrets") == "Read(./secrets/**)"
    assert denied(permissions, "glob", pattern="*", path="secrets/a") == "Read(./secrets/**)"
    assert denied(permissions, "grep", pattern="x") is None  # the root itself is not under it
    assert denied(permissions, "edit", path="secrets/k") is None  # Read does not cover edit
    assert denied(permissions, "edit", path="locked.txt") == "Edit(./locked.txt)"
    assert denied(permissions, "write", path="locked.txt") == "Edit(./locked.txt)"
    assert denied(permissions, "read", path="locked.txt") is None
    assert denied(policy("Write(./w.txt)"), "edit", path="w.txt") is None  # Write covers write only
    assert denied(policy("Write(./w.txt)"), "write", path="w.txt") == "Write(./w.txt)"
    assert denied(policy("Grep(./a)"), "grep", pattern="x", path="a/b") == "Grep(./a)"


def test_a_search_does_not_look_in_files_a_read_rule_denies() -> None:
    unsearchable = policy("Read(.env)", "Bash(rm:*)").unsearchable(ROOT)
    assert unsearchable is not None
    files = ("src/a.py", ".env", "sub/.env", "env")
    assert [unsearchable(file) for file in files] == [False, True, True, False]
    assert policy("Bash(rm:*)").unsearchable(ROOT) is None
    # relative to the working directory the search runs in
    in_sub = policy("Read(./sub/x.py)").unsearchable(f"{ROOT}/sub")
    assert in_sub is not None and in_sub("x.py") and not in_sub("y.py")


# -- the policy -------------------------------------------------------------------------------


def names(tools: tuple[object, ...]) -> list[str]:
    return [tool.name for tool in tools]  # type: ignore[attr-defined]


def test_bare_rules_and_tools_take_tools_away_and_refuse_their_calls() -> None:
    assert NO_RESTRICTIONS.restrict(TOOLS) == TOOLS
    permissions = policy("Bash", "Edit", "WebFetch", "NotebookEdit")
    assert permissions.removed == {"bash", "edit", "write", "web_fetch"}
    assert "bash" not in names(permissions.restrict(TOOLS)) and "read" in names(permissions.restrict(TOOLS))
    assert denied(permissions, "bash", command="ls") == "Bash"
    assert permissions.inert() == ["NotebookEdit (settings.json)"]
    only = policy(tools="Read,Grep")
    assert names(only.restrict(TOOLS)) == ["read", "grep"]
    denial = only.denial("bash", {"command": "ls"}, ROOT)
    assert (
        denial is not None
        and "Bash is not among the tools --tools allows (Read,Grep)" in denial.result_text()
    )
    assert names(policy(tools="").restrict(TOOLS)) == []
    assert names(policy(tools="default").restrict(TOOLS)) == list(TOOL_NAMES)
    assert parse_base_tools("Read TodoWrite bash").unknown == ("TodoWrite",)


def test_a_denial_names_the_rule_and_where_it_came_from() -> None:
    permissions = Permissions(
        (
            *rules_from(["Bash(touch:*)"], "/p/.claude/settings.json"),
            *rules_from(["Agent(rev)"], "--disallowedTools"),
        ),
        root=ROOT,
        home=HOME,
    )
    denial = permissions.denial("bash", {"command": "touch x"}, ROOT)
    assert denial is not None and denial.result_text() == (
        "error: denied by the permission rule Bash(touch:*) (from /p/.claude/settings.json); "
        "the call did not run"
    )
    assert denied(permissions, "agent", brief="b", check="c", definition="rev") == "Agent(rev)"
    assert denied(permissions, "agent", brief="b", check="c") is None
    assert denied(policy("Agent(general-purpose)"), "agent", brief="b", check="c") == "Agent(general-purpose)"
    assert denied(policy("Skill(deploy)"), "skill", name="deploy") == "Skill(deploy)"
    assert denied(policy("Skill(deploy)"), "skill", name="deployer") is None
    assert denied(policy("Skill(ops:*)"), "skill", name="ops:restart") == "Skill(ops:*)"
    fetch = policy("WebFetch(domain:*.example.com)", "WebFetch(domain:x.org)")
    assert denied(fetch, "web_fetch", url="https://api.example.com/v1") == "WebFetch(domain:*.example.com)"
    assert denied(fetch, "web_fetch", url="http://user@x.org:8080/p") == "WebFetch(domain:x.org)"
    assert denied(fetch, "web_fetch", url="https://y.org/x.org") is None


# -- the settings -----------------------------------------------------------------------------


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_every_files_deny_rules_hold_each_with_its_file(tmp_path: Path) -> None:
    write_json(
        tmp_path / ".claude/settings.json", {"permissions": {"deny": ["Bash(rm:*)"], "defaultMode": "plan"}}
    )
    write_json(tmp_path / ".aerix/settings.json", {"permissions.deny": ["Read(./.env)", "Bash(rm:*)"]})
    write_json(
        tmp_path / ".claude/settings.local.json", {"permissions": {"deny": ["Edit"], "allow": ["Bash"]}}
    )
    loaded = load_settings(tmp_path, SettingsOverrides(disallowed=("WebFetch",), tools="Read,Edit,Bash"))
    assert [
        (deny.rule.text, Path(deny.origin).name if "/" in deny.origin else deny.origin)
        for deny in loaded.permissions.deny
    ] == [
        ("Bash(rm:*)", "settings.json"),
        ("Read(./.env)", "settings.json"),
        ("Edit", "settings.local.json"),
        ("WebFetch", "--disallowedTools"),
    ]
    assert loaded.permissions.deny[0].origin == str(tmp_path / ".claude/settings.json")
    assert loaded.settings.permissions.deny == ("Bash(rm:*)", "Read(./.env)", "Edit")
    assert loaded.settings.permissions.allow == ("Bash",)  # read, and moot
    assert loaded.permissions.root == str(tmp_path)
    assert loaded.permissions.base.names == {"read", "edit", "bash"}


def test_an_unreadable_deny_rule_is_one_settings_line_naming_the_file(tmp_path: Path) -> None:
    write_json(tmp_path / ".claude/settings.json", {"permissions": {"deny": ["Read", "Bash(rm"]}})
    with pytest.raises(SettingsError) as raised:
        load_settings(tmp_path)
    message = str(raised.value)
    assert message.startswith(f"settings: {tmp_path / '.claude/settings.json'}: 'permissions.deny'")
    assert "'Bash(rm' has no closing ')'" in message and "\n" not in message
    with pytest.raises(SettingsError, match=r"'permissions\.deny'"):
        parse_settings({"permissions": {"deny": "Bash"}})
    # allow and ask are not checked: aerix never consults them
    assert parse_settings({"permissions": {"allow": ["Bash(x"], "ask": ["?"]}}).permissions.ask == ("?",)


def test_startup_names_the_rules_and_tools_that_take_nothing_away(tmp_path: Path) -> None:
    write_json(tmp_path / ".claude/settings.json", {"permissions": {"deny": ["NotebookEdit", "Bash(rm:*)"]}})
    project = ProjectFiles(SettingsOverrides(tools="Read,TodoWrite")).load(tmp_path)
    assert project.permissions.base.names == {"read"} and project.permissions.root == str(tmp_path.resolve())
    notes = [note for note in project.notes if "NotebookEdit" in note or "TodoWrite" in note]
    claude_file = tmp_path.resolve() / ".claude/settings.json"
    assert notes == [
        f"permissions.deny: NotebookEdit ({claude_file}) names no aerix tool; it denies nothing",
        "--tools: TodoWrite is not an aerix tool; left out",
    ]
