"""The ``aerix`` command line: ``main`` parses and dispatches; ``request`` runs the agent's own
flags (``-p``, the screen); ``sessions`` and ``profiles`` hold their commands' parsers and
handlers. Only this package and ``aerix.wiring`` import the adapters."""
