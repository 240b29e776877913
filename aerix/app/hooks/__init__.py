"""Hooks on Claude Code's contract: firing an event (``fire``) and the agent lifecycle's hooks
(``lifecycle``); the transcript their handlers read is kept by ``aerix.app.sessions.transcript``."""
