"""Images in the user's prompt: a typed or pasted image path, ``@img.png`` (``@"with space.png"``), or a file
dropped on the terminal (terminals paste its path: quoted, with ``\\ `` escapes, or as a ``file://`` URI)
becomes an image attachment sent with the prompt. The text stays as typed; each existing PNG/JPEG/WebP/GIF
file it names (at most 20, dsh's per-message limit) follows it as an ``image`` block, admitted into the
attachment store (``dsh_tui.store.attachments``) like a ``read_image`` result.

``find_images`` is cheap (a few ``stat`` calls; the composer calls it before sending, to tell the user
when the model cannot take images); ``prompt_content`` decodes and stores the images (Pillow: call it off
the UI thread).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from dsh_tui.session.errors import DshError

MAX_IMAGES = 20
# @"quoted", "quoted", 'quoted', or a run of non-space characters (a backslash escapes the next one)
_TOKEN = re.compile(r'''@?"([^"\n]+)"|'([^'\n]+)'|((?:\\.|[^\s'"])+)''')
_EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp", ".gif")


def _candidate(raw: str) -> str:
    if raw.startswith("@"):
        raw = raw[1:]
    if raw.startswith("file://"):
        parts = urlsplit(raw)
        return unquote(parts.path) if parts.netloc in ("", "localhost") else ""
    return re.sub(r"\\(.)", r"\1", raw)


def find_images(text: str, cwd: str | os.PathLike[str]) -> list[Path]:
    """The image files ``text`` names that exist (absolute, in order, each once)."""
    found: list[Path] = []
    for match in _TOKEN.finditer(text):
        raw = next(g for g in match.groups() if g is not None)
        path = _candidate(raw.rstrip(".,;:!?)") if match.group(3) is not None else raw)
        if not path.lower().endswith(_EXTENSIONS):
            continue
        full = Path(os.path.expanduser(path))
        if not full.is_absolute():
            full = Path(cwd) / full
        try:
            if not full.is_file():
                continue
        except OSError:
            continue
        full = Path(os.path.normpath(full))
        if full not in found:
            found.append(full)
    return found


def prompt_content(text: str, cwd: str | os.PathLike[str]) -> str | list[dict[str, Any]]:
    """``text`` as is, or ``[text block, image blocks…]`` when it names image files; a file that cannot be
    attached raises ``DshError`` (``cannot attach "<name>": <reason>``)."""
    paths = find_images(text, cwd)
    if not paths:
        return text
    if len(paths) > MAX_IMAGES:
        raise DshError(f"at most {MAX_IMAGES} images can be sent with one message ({len(paths)} named)")
    from dsh_tui.store import attachments

    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    total = 0
    for path in paths:
        try:
            data = path.read_bytes()
            total += len(data)
            if total > attachments.MAX_MESSAGE_IMAGE_BYTES:
                raise attachments.AttachmentError("the message's images exceed 200 MiB", "IMAGE_TOO_LARGE")
            ref = attachments.save_image(data, attachments.media_type_for_path(str(path)), path.name)
        except OSError as err:
            raise DshError(f'cannot attach "{path.name}": {(err.strerror or str(err)).lower()}') from None
        except attachments.AttachmentError as err:
            raise DshError(f'cannot attach "{path.name}": {err}') from None
        blocks.append({"type": "image", "attachment": ref})
    return blocks
