"""dsh_tui.runtime"""
