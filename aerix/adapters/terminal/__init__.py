"""The terminal: the interactive screen's frame, blocks and live lines (rich), and the
headless run's one-line status on stderr."""
