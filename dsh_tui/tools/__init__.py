"""dsh_tui.tools"""
