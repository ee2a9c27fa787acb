"""dsh_tui.llm"""
