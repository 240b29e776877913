"""Profiles: prompts kept in git per model, attached at startup, tuned and synced by reflection.

``writes`` holds the one way to change a branch (a commit by compare-and-swap), ``attach`` what
startup reads, ``evidence``/``reflection``/``tune``/``sync`` the commands that learn, and
``manage`` the ones a person uses by hand (``show``, ``log``, ``edit``, a session's branch).
"""
