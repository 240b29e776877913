"""The composition root: the real adapters behind the use cases' ports.

``aerix.cli`` parses and renders; this package builds each use case on the real store, pool,
git and files, and runs it: ``requests`` (a request, headless or on the screen),
``stream_session`` (``--input-format stream-json``'s prompts and control requests) and
``commands`` (the session and profile commands). Nothing else imports both the application
layer and the adapters.
"""
