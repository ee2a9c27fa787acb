"""What the chat screen tells the user about its keys: the F1 help pane's text (``ChatScreen.HELP``) and the
composer's hint line (its border subtitle and placeholder: what Enter does now)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dsh_tui.ui.screens.chat import ChatScreen

PLACEHOLDER = "Ask the agent…  (F1 for help)"
READ_ONLY_PLACEHOLDER = "Read-only view of a stored session. Type, then Enter resumes it here and sends."
HINT_IDLE = "Enter send · Ctrl+J newline"
HINT_FAILED = "F5 retry · Enter send · Esc Esc rewind"
HINT_RUNNING = "Enter queue · Ctrl+S steer · Esc cancel"
HINT_RUNNING_SWAPPED = "Enter steer · Ctrl+S queue · Esc cancel"
HINT_QUEUE = "s steer now · e edit · Del remove · Esc back"  # the queue has the focus: its keys, not the composer's
HINT_READ_ONLY = "read-only · Enter resumes here"
HINT_NO_MODEL = "no model configured (see above) · your text is kept"

HELP = """
## Chat

- **Enter** sends while idle; **Ctrl+J** inserts a newline; a paste arrives whole (20 lines or more show
  as `[Pasted text #1 +N lines]`, sent whole; **F2** expands them); **Ctrl+G** edits the
  draft in `$VISUAL` / `$EDITOR`. While the agent runs,
  Enter queues a follow-up for the next turn and **Ctrl+S** (or Ctrl+Enter where the terminal sends it)
  steers into the running turn (swap them with `chat.enter_steers`).
- **Up** on the composer's first line / **Down** on its last recall earlier prompts (this session's, then
  this workspace's past sessions'); Down past the newest brings the draft back. **Ctrl+L** searches them
  as you type (Ctrl+L or Up: older match, Down: newer, **Enter** keeps it, **Esc** restores the draft).
- **Esc** (or **Ctrl+C**) cancels the running turn; the partial answer stays, marked. Ctrl+C while idle
  clears the composer (**Ctrl+Z** brings the text back); **Ctrl+Q** quits. **Esc Esc** while idle rewinds: pick
  an earlier prompt, the session is forked just before it (the original is kept) and the prompt is put
  back in the composer to edit and resend.
- **F5** (or `/retry`) sends the failed last turn's prompt again. **F4** cycles the permission mode
  (read-only → workspace-write → full-access; also `/permission [mode]`), shown in the status bar.
  `/model [name] [effort]` switches this session's model and reasoning effort.
- Approvals: **a** allow once, **s** allow this command (or this tool with these arguments) for the rest
  of the session, **r** reject, **e** reject with a reason the model reads — only while the panel has the
  focus. While you type in the composer the panel does not take it: **Tab** moves to the panel. Keys in
  the panel's first 0.6 s go back to the composer; Enter alone decides nothing.
- Questions from the model (and plan reviews): **1**–**9** choose an option, typing gives another answer
  (or, for a plan, feedback that keeps planning), **Enter** sends, **Esc** dismisses it to reply in the
  composer; the approval panel's guard applies (Tab moves to it while you type).
- **F8** (or `/plan`, `/plan off`) turns plan mode on or off: read-only tools until you approve the plan.
  `/goal <objective>` sets a goal the agent keeps working on, round after round (`/goal` shows it; `pause`,
  `resume`, `edit`, `clear`); the status bar shows plan mode and the goal.
- **Ctrl+O** cycles tool cards collapsed → expanded → hidden; **Ctrl+R** shows or hides reasoning
  (the status bar shows what is not at its default).
- **PageUp / PageDown** scroll the transcript; **Ctrl+End** goes back to the bottom; **Ctrl+Home** loads
  earlier items.
- **Ctrl+F** searches the whole session: **Enter** (or F3, Up) goes to the previous (older) match,
  **Shift+Enter** (Shift+F3, Down) to the next, **Esc** closes the bar.
- **Shift+Tab** from the composer selects the latest item (**Up/Down** move, **Esc** goes back): **c** copies
  it (OSC 52 clipboard; a file when too big), **b** copies its next code block (**1**–**9** pick one),
  **Enter** expands or collapses a tool card alone, **v** opens the whole output in a viewer (**Ctrl+F**
  finds in it, **Esc** returns).
- The queue (above the composer, **Ctrl+Down** or **Up** from the composer's first line): **s** steers the
  highlighted message now, **e** edits, **Delete** removes, **Esc** goes back to the composer. Quitting
  keeps what is queued: it comes back in the composer when the session is resumed.
- A read-only view (opened from the session browser): **Enter** in the composer resumes the session
  here and sends what you typed.
- **Ctrl+B** opens the session browser (Esc or Ctrl+B comes back here);
  **Ctrl+T** the timeline of this session (its spans, and what changed between model requests);
  **Ctrl+P** the command palette; **Ctrl+Q** quits and prints how to resume.
"""


def composer_hint(chat: ChatScreen) -> tuple[str, str]:
    """(border subtitle, placeholder) of the composer: send, queue (and how to steer), or resume."""
    harness = chat.bridge.harness
    if chat.model_hint and harness is None and chat.bridge.loop is None:
        return HINT_NO_MODEL, PLACEHOLDER
    if chat.read_only:
        reason = harness.read_only_reason if harness is not None else None  # e.g. a parent's subagent
        return (HINT_READ_ONLY if reason is None else "Esc back"), reason or READ_ONLY_PLACEHOLDER
    if chat.built("queue_list") is not None and chat.queue_list.has_focus:
        return HINT_QUEUE, PLACEHOLDER
    if chat.running:
        return (HINT_RUNNING_SWAPPED if chat.enter_steers else HINT_RUNNING), PLACEHOLDER
    return (HINT_FAILED if chat.last_failed else HINT_IDLE), PLACEHOLDER
