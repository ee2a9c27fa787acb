"""dsh-tui: DeepSeek Harness sessions in Python, with a Textual terminal app.

Layers (imports only point down): ui -> runtime -> (llm, tools, store) -> session.
Nothing outside ``dsh_tui.ui`` imports textual or rich.
"""

__version__ = "0.1.0"
