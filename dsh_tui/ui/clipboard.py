"""Copy text for the user: to the terminal's clipboard (OSC 52, works over SSH and in tmux) or a file.

OSC 52 cannot be confirmed (a terminal that ignores it says nothing), and terminals cap its size, so a
text over ``OSC52_LIMIT`` bytes goes to a file under the data directory instead; the returned message
says which happened and where, for a toast.
"""

from __future__ import annotations

import re
import time
from typing import Any

OSC52_LIMIT = 100_000  # bytes of UTF-8; xterm-likes and tmux take this much, some take no more


def copy_text(app: Any, text: str, *, name: str) -> str:
    """Copy ``text`` (described as ``name``, e.g. "request JSON"); returns "copied …" or "saved … to PATH"."""
    size = len(text.encode("utf-8"))
    if size <= OSC52_LIMIT:
        app.copy_to_clipboard(text)
        return f"Copied {name} to the clipboard ({_size(size)})"
    try:
        from dsh_tui.paths import data_dir
        from dsh_tui.store.fsio import private_dir, write_private

        folder = private_dir(data_dir() / "clipboard")  # the text is session content: the user's alone
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "copy"
        path = folder / f"{slug}-{time.strftime('%Y%m%d-%H%M%S')}.txt"
        n = 1
        while path.exists():
            n += 1
            path = folder / f"{slug}-{time.strftime('%Y%m%d-%H%M%S')}-{n}.txt"
        write_private(path, text.encode("utf-8", errors="surrogatepass"), create_only=True, fsync=False)
    except OSError as err:
        return f"Could not save {name}: {err.strerror or err}"
    return f"Saved {name} ({_size(size)}, too big for the clipboard) to {path}"


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"
