"""The README's browser screenshot: ``dsh-tui serve -- run`` in headless Chromium after one turn with a tool.

Run:  .venv/bin/python tests/ui/serve_screenshot.py [OUT.png]   (default screenshots/serve-chromium.png)
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.cli.serve_support import Served  # noqa: E402
from tests.ui.browser_support import ModelServer, launch, send_prompt, wait_screen  # noqa: E402


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "screenshots" / "serve-chromium.png"
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="serve-shot-"))
    ws = tmp / "project"
    ws.mkdir()
    (ws / "a.txt").write_text("the word is MAGIC-4242\n")
    home = tmp / "home"
    os.environ.update({"DSH_HOME": str(home / ".dsh"), "XDG_CONFIG_HOME": str(home / ".config"),
                       "XDG_CACHE_HOME": str(home / ".cache"), "XDG_DATA_HOME": str(home / ".local/share")})
    root = tmp / "sessions"
    with ModelServer() as model, \
            Served(["--port", "0", "--", "run", "--root", str(root)], cwd=ws,
                   env={"DEEPSEEK_API_KEY": "sk-x", "DEEPSEEK_BASE_URL": model.base_url}) as served, \
            sync_playwright() as pw:
        context = launch(pw, tmp)
        try:
            page = context.new_page()
            page.set_viewport_size({"width": 1000, "height": 420})
            page.goto(served.url)
            wait_screen(page, "Ask the agent")
            served.wait_log(lambda s: any(root.rglob("session.lock")), timeout=60)
            page.focus("textarea.xterm-helper-textarea")
            send_prompt(page, "please read a.txt")
            wait_screen(page, "The file says: MAGIC-4242")
            page.wait_for_timeout(500)
            page.screenshot(path=str(out))
        finally:
            context.close()
    print(out)


if __name__ == "__main__":
    main()
