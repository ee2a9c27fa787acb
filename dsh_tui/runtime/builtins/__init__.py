"""Built-in feature plugins (ids in ``dsh_tui.runtime.plugins.BUILTIN_IDS``): session titles and project
instructions. Each is an ordinary plugin object (``name``, ``Config``, ``apply(ctx, config)``)."""

from dsh_tui.runtime.builtins.instructions import AGENT_INSTRUCTIONS
from dsh_tui.runtime.builtins.titles import SESSION_TITLE, SESSION_TITLE_LLM, set_user_title

__all__ = ["AGENT_INSTRUCTIONS", "SESSION_TITLE", "SESSION_TITLE_LLM", "set_user_title"]
