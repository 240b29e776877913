"""Hooks on Claude Code's contract: firing an event (``fire``) and the transcript its handlers read
(``transcript``)."""
