"""dsh_tui.store"""
