"""The ``caldrix`` command: :mod:`caldrix.cli.main` parses the command line and hands each
command to its module (``run``, ``pool``, ``models``), which checks the values, calls the
pool, the engines or the model cache, and prints the outcome. The console script enters
through :mod:`caldrix.cli.entry`; this package imports nothing, so that entry stays light."""
