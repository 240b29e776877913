"""The screen's colours and marks, in one place, so every line speaks the same visual language.

Colours are rich styles; rich downgrades them to what the terminal supports (and drops them
when the output is not a terminal), so nothing here checks the terminal itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    # Named in annotations only: a headless request does not load the screen's ports.
    from aerix.app.ports.screen import NoteLevel

#: The brand colour: the peak mark, warnings, the prompt marker.
EMBER: Final = "#e8743b"
#: The snow on the peak, and the wordmark.
SNOW: Final = "bold #f2f2f2"
#: Secondary text: hints, figures' units, the frame's border.
DIM: Final = "dim"
ERROR: Final = "bold red"
OK: Final = "green"
#: git's own diff colours.
DIFF_ADDED: Final = "green"
DIFF_REMOVED: Final = "red"
DIFF_HUNK: Final = "cyan"
DIFF_META: Final = "bold"

#: A startup note's mark and style by level: ember ▲ warns, red ✗ errs, information is plain.
NOTE_MARKS: Final[dict[NoteLevel, tuple[str, str]]] = {
    "warning": ("▲", EMBER),
    "error": ("✗", ERROR),
    "info": (" ", ""),
}
READY_MARK: Final = "✓"
#: The user's prompt, echoed into the transcript.
PROMPT_MARK: Final = "›"
#: An agent's thought, and its final.
TURN_MARK: Final = "●"
#: A tool call under its turn.
CALL_MARK: Final = "⎿"
#: The thinking icon's frames (the status line shows one, chosen by the elapsed time).
THINKING_FRAMES: Final = ("⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏")
#: The thinking icon advances one frame this often.
THINKING_FRAME_SECS: Final = 0.1
