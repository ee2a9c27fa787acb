"""dsh's ``read_image`` tool (``dsh-tool-fs`` ``read-image``, 0.2's texts): a PNG/JPEG/WebP/GIF file is
admitted into the attachment store (``dsh_tui.store.attachments``: dsh's limits, downscaling) and the
result carries the image itself beside a short text envelope.

The route gate comes first, before any file is read: a model that does not declare image input gets dsh's
refusal (``cannot read "<path>" as an image: model "<m>" does not declare image input; switch to an
image-capable model to read images``).
"""

from __future__ import annotations

import asyncio
import os
import stat as stat_mod
from collections.abc import Callable
from typing import Any

from dsh_tui.tools.base import ToolContext, ToolDefinition
from dsh_tui.tools.common import fs_error, plain_error
from dsh_tui.tools.paths import resolve_target

READ_IMAGE_SCHEMA: dict[str, Any] = {
    "name": "read_image",
    "description": "Read a PNG/JPEG/WebP/GIF file and return the image itself. Large images are downscaled "
                   "automatically; do not install image libraries or create thumbnails to inspect an image.",
    "parameters": {
        "type": "object",
        "properties": {
            "file_path": {"type": "string",
                          "description": "Path to the image file, resolved by the filesystem backend."},
        },
        "required": ["file_path"],
    },
}


def format_image_read_output(path: str, image: dict[str, Any]) -> str:
    """dsh's envelope beside the image block (``formatImageReadOutput``)."""
    scaled = ""
    original = image.get("originalDimensions")
    if original is not None:
        x = f"{original['width'] / image['width']:.2f}"
        y = f"{original['height'] / image['height']:.2f}"
        advice = f"multiply coordinates by {x}" if x == y else \
            f"multiply x coordinates by {x} and y coordinates by {y}"
        scaled = (f" (downscaled from {original['width']}x{original['height']} px; {advice} to locate features "
                  f"in the original file)")
    return (f"<path>{path}</path>\n<type>image</type>\n<content>\n{image['mediaType']} image, {image['width']}x"
            f"{image['height']} px, {image['bytes']} bytes{scaled}\n</content>")


def _read_capped(real: str, shown: str, cap: int) -> bytes:
    st = os.stat(real)
    if not stat_mod.S_ISREG(st.st_mode):
        raise fs_error(f'cannot read "{shown}": not a regular file', "FS_NOT_REGULAR_FILE")
    with open(real, "rb") as fh:
        data = fh.read(cap + 1)
    return data


def _admit(data: bytes, media: str, shown: str, extension: str, declared: str | None) -> dict[str, Any]:
    from dsh_tui.store import attachments as att

    try:
        return att.save_image(data, media, os.path.basename(shown))
    except att.AttachmentError as err:
        code = err.code
        if code == "IMAGE_DIMENSION_TOO_LARGE":
            text = (f"at least one image side exceeds the {att.MAX_IMAGE_DIMENSION}px limit; downscale the image "
                    f"and read the smaller copy")
        elif code == "IMAGE_TOO_MANY_PIXELS":
            text = (f"the image exceeds the {att.MAX_IMAGE_PIXELS}-pixel decoded-size limit; downscale the image "
                    f"and read the smaller copy")
        elif code == "IMAGE_TOO_LARGE":
            text = ("the image cannot be stored within the deployment's byte limits; downscale the image and read "
                    "the smaller copy")
        elif code == "INVALID_IMAGE" and declared is None:
            text = ("the bytes do not decode as a supported PNG/JPEG/WebP/GIF image; the file may be truncated or "
                    "corrupt")
        elif code == "IMAGE_TYPE_MISMATCH" and declared is None:
            text = (f"the file signature claims {media}, but the bytes decode as a different image format; the file "
                    f"may be corrupt")
        elif code == "IMAGE_TYPE_MISMATCH":
            text = (f"the {extension} extension declares {media}, but the bytes use a different image format; rename "
                    f"the file to match its actual format if it is PNG/JPEG/WebP/GIF, or convert it to one of "
                    f"those formats")
        else:
            text = str(err)
        raise plain_error(f'cannot read "{shown}": {text}') from None


def read_image_tool(route: Callable[[], tuple[str, bool]]) -> ToolDefinition:
    """``route()`` gives (model id, whether it takes images) at call time (the model can change)."""

    async def execute(args: Any, ctx: ToolContext) -> Any:
        from dsh_tui.store import attachments as att

        file_path = args.get("file_path") if isinstance(args, dict) else None
        if not isinstance(file_path, str) or not file_path.strip():
            raise plain_error("file_path must be a non-empty string")
        extension = os.path.splitext(file_path)[1].lower()
        declared = att.media_type_for_path(file_path)
        if declared is None and extension:
            raise plain_error(f'cannot read "{file_path}": the {extension} extension does not declare a supported '
                              f"image format; read_image accepts PNG/JPEG/WebP/GIF files, including extension-less "
                              f"files in those formats")
        model, takes_images = route()
        if not model:
            raise plain_error(f'cannot read "{file_path}" as an image: the current model route could not be resolved')
        if not takes_images:
            raise plain_error(f'cannot read "{file_path}" as an image: model "{model}" does not declare image input; '
                              f"switch to an image-capable model to read images")
        target = await asyncio.to_thread(resolve_target, ctx, file_path, subject="operation")
        shown = target.display_path
        cap = min(att.MAX_IMAGE_BYTES, att.MAX_MESSAGE_IMAGE_BYTES)
        try:
            data = await asyncio.to_thread(_read_capped, target.real_path, shown, cap)
        except FileNotFoundError:
            raise fs_error(f'cannot read "{shown}": not found', "FS_NOT_FOUND") from None
        except PermissionError:
            raise fs_error(f'cannot read "{shown}": permission denied', "FS_PERMISSION_DENIED") from None
        except IsADirectoryError:
            raise fs_error(f'cannot read "{shown}": not a regular file', "FS_NOT_REGULAR_FILE") from None
        if len(data) > cap:
            raise plain_error(f'cannot read "{shown}": the image cannot be stored within the deployment\'s byte '
                              f"limits; downscale the image and read the smaller copy")
        media = declared or att.sniff(data)
        if media is None:
            raise plain_error(f'cannot read "{shown}": the file content is not a supported image format; read_image '
                              f"accepts PNG/JPEG/WebP/GIF")
        ref = await asyncio.to_thread(_admit, data, media, shown, extension, declared)
        return {"path": shown, "image": ref}

    def render(_args: Any, value: Any) -> list[dict[str, Any]]:
        return [{"type": "text", "text": format_image_read_output(value["path"], value["image"])},
                {"type": "image", "attachment": value["image"]}]

    return ToolDefinition(
        name="read_image",
        description=READ_IMAGE_SCHEMA["description"],
        parameters=READ_IMAGE_SCHEMA["parameters"],
        execute=execute,
        render=render,
        presentation_meta=lambda _args, value: {"path": value["path"]},
        is_concurrency_safe=lambda _args: True,
        access="read",
    )
