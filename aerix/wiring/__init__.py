"""The composition root: the real adapters behind the use cases' ports.

``aerix.cli`` parses and renders; this package builds each use case on the real store, pool,
git and files, and runs it: ``requests`` (a headless request, and every port a request uses),
``screen`` (bare ``aerix``), ``stream_session`` (``--input-format stream-json``: the use case is
``aerix.app.request.stream``), ``session_commands`` and ``profile_commands``. Nothing else
imports both the application layer and the adapters.
"""
