"""Every port serves one job: no Protocol in ``aerix.app.ports`` has more than 8 members,
counting those it inherits from other Protocols (what an adapter has to provide)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import aerix.app.ports

MAX_MEMBERS = 8


def _protocols() -> dict[str, type]:
    found = {}
    for module_info in pkgutil.iter_modules(aerix.app.ports.__path__):
        module = importlib.import_module(f"aerix.app.ports.{module_info.name}")
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and getattr(value, "_is_protocol", False)
                and value.__module__ == module.__name__
            ):
                found[f"{module_info.name}.{name}"] = value
    return found


def _members(protocol: type) -> set[str]:
    """The public names a Protocol and the Protocols it extends declare (methods, properties)."""
    return {
        name
        for base in protocol.__mro__
        if getattr(base, "_is_protocol", False) and base.__module__.startswith("aerix.")
        for name in vars(base)
        if not name.startswith("_")
    }


def test_the_ports_are_found() -> None:
    protocols = _protocols()
    assert {"sessions.SessionLog", "pool.PoolContexts", "screen.ScreenInput"} <= set(protocols)
    assert _members(protocols["screen.ScreenInput"]) == {"next_input", "pick_session", "review"}


def test_no_port_has_more_than_8_members() -> None:
    wide = {
        name: sorted(members)
        for name, protocol in _protocols().items()
        if len(members := _members(protocol)) > MAX_MEMBERS
    }
    assert wide == {}, f"split these ports by job: {wide}"
