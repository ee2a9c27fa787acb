"""Run in a fresh process: start the app one way, stop it at its first rendered frame and write, as JSON,
every module imported by then with what imported it (``tests/ui/test_startup_budget.py``).

    python tests/ui/startup_probe.py OUT.json {DshApp|run|browser}
    python tests/ui/startup_probe.py OUT.json open SESSION_LOG   (the first frame showing a stored session)

The importer of a module is the module whose code ran the import statement (the nearest frame outside
importlib), so a report can say where to defer it. Only the main thread's imports are recorded as
"main"; another thread's (a worker started before the first frame) are recorded under its name."""

from __future__ import annotations

import json
import os
import sys
import threading

OUT, CASE = sys.argv[1], sys.argv[2]
imported: dict[str, list[str]] = {}  # module -> [importer, thread]


class _Recorder:
    """A meta-path finder that finds nothing: it notes who asked, then lets the real finders work."""

    @staticmethod
    def find_spec(name, path=None, target=None):  # noqa: ANN001, ANN205, ARG004
        if name not in imported:
            frame = sys._getframe(1)
            importer = "?"
            while frame is not None:
                module = frame.f_globals.get("__name__", "")
                if not module.startswith(("importlib", "_frozen_importlib")) and module != __name__:
                    importer = module
                    break
                frame = frame.f_back
            thread = threading.current_thread()
            imported[name] = [importer, "main" if thread is threading.main_thread() else thread.name]
        return None


already = set(sys.modules)  # the interpreter's own start-up (site, encodings): before the probe
sys.meta_path.insert(0, _Recorder)

from dsh_tui.ui.app import DshApp  # noqa: E402

shown = DshApp._display


def _display(self, screen, renderable):  # noqa: ANN001, ANN202
    shown(self, screen, renderable)
    if CASE == "open" and not (self.chat is not None and self.chat.attached and self.chat.transcript.views):
        return  # a stored session: the first frame that shows its latest turn
    if renderable is not None:
        modules = {name: imported.get(name, ["?", "main"]) for name in sys.modules if name not in already}
        with open(OUT, "w") as out:
            json.dump(modules, out)
        os._exit(0)


DshApp._display = _display
if CASE == "DshApp":
    DshApp(None).run(headless=True, size=(100, 30))
elif CASE == "open":  # python startup_probe.py OUT.json open LOG: the browser's open of a stored session
    from pathlib import Path

    from dsh_tui.store.catalog import SessionRow

    log = Path(sys.argv[3])
    row = SessionRow(path=str(log), root=str(log.parents[2]), revision="", id=log.parent.name)

    class Opening(DshApp):
        def on_mount(self) -> None:  # DshApp.on_mount runs too (Textual calls it for each class)
            self.open_session(row)

    Opening(None, start="none").run(headless=True, size=(100, 30))
else:
    sys.argv = ["dsh-tui", *(["run"] if CASE == "run" else [])]
    from dsh_tui.cli import main

    main()
