"""The ids of the app's key bindings (``[keymap] "chat.cards" = "f6"``), so that the settings can be checked
without importing the UI (``config`` is below ``ui``). tests/ui/test_binding_ids.py keeps this list equal to the
ids the app's screens and widgets declare."""

BINDING_IDS: frozenset[str] = frozenset({
    "app.browser", "app.help", "app.help_down", "app.help_up", "app.quit", "app.timeline", "browser.archive",
    "browser.archived", "chat.interrupt", "composer.expand_pastes",
    "browser.back", "browser.children", "browser.delete", "browser.escape", "browser.export", "browser.filter",
    "browser.fork", "browser.list", "browser.new", "browser.refresh", "browser.rename", "browser.resume",
    "browser.scope", "browser.search", "browser.timeline", "browser.trash", "chat.bottom", "chat.cancel",
    "chat.cards", "chat.earlier", "chat.find", "chat.pagedown", "chat.pageup", "chat.permission", "chat.plan", "chat.queue",
    "chat.reasoning", "chat.retry", "chat.terminal", "composer.editor", "composer.history_search", "composer.newline",
    "composer.steer", "item.block", "item.copy", "item.down", "item.leave", "item.toggle", "item.up", "item.view",
    "list.down", "list.end", "list.home", "list.pagedown", "list.pageup", "list.select", "list.up", "mcp.close",
    "mcp.reconnect", "modal.cancel", "output.back", "output.copy", "output.find", "search.close", "search.next",
    "search.previous", "spans.collapse", "spans.expand", "spans.inspect", "subagent.back", "subagent.open",
    "timeline.back", "timeline.copy_curl", "timeline.copy_json", "timeline.filter", "timeline.follow",
    "timeline.ledger", "timeline.next", "timeline.prev", "timeline.wide",
})
