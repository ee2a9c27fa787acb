"""The timeline screen (a trace viewer of the session): see ``screen.py``."""

from dsh_tui.ui.screens.timeline.screen import TimelineScreen, parse_filter

__all__ = ["TimelineScreen", "parse_filter"]
