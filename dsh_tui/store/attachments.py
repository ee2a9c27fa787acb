"""Image attachments: dsh's content-addressed local store (``dsh-attachment-local``) in Python.

An image a user attaches or the model reads with ``read_image`` is admitted (its bytes decoded and checked
against dsh's limits), normalized (a clean, single-frame 8-bit sRGB image inside 2048×2048 pixels and
4 MiB passes as is; anything else is re-encoded as dsh 0.2 does: WebP when it has transparency, else JPEG,
quality 85, 75 or 60) and written once under ``$DSH_HOME/attachments/v1/objects/<aa>/<sha256>``
— the same place and the same ids (``sha256:<hex of the normalized bytes>``) as dsh, so a session that
carries an image block stays readable by both. A message holds only the reference::

    {"type": "image", "attachment": {"attachmentId": "sha256:…", "mediaType": "image/png", "bytes": 1234,
                                     "width": 640, "height": 480, "name": "shot.png",
                                     "originalDimensions": {"width": 4000, "height": 3000}}}  # when reduced

A model request gets a *request version* of each image, sized to the route's pixel and byte budget
(``request_image``). Pillow does the decoding and encoding; it is imported only here, and this module only
when an image is involved (start-up cost, issue #29).
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh_tui.session.errors import DshError

MEDIA_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
EXTENSIONS = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp",
              ".gif": "image/gif"}
# dsh-attachment-local's defaults
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_IMAGES_PER_MESSAGE = 20
MAX_MESSAGE_IMAGE_BYTES = 200 * 1024 * 1024
MAX_IMAGE_PIXELS = 64_000_000
MAX_IMAGE_DIMENSION = 8192
NORMALIZED_MAX_PIXELS = 2048 * 2048
NORMALIZED_MAX_DIMENSION = 8192
NORMALIZED_MAX_BYTES = 4 * 1024 * 1024
# dsh's inline request budget: base64 bytes and images, removed in steps of these quanta when exceeded
MAX_INLINE_REQUEST_BYTES = 20 * 1024 * 1024
INLINE_OFFLOAD_QUANTUM = 10 * 1024 * 1024
MAX_IMAGES_PER_REQUEST = 600
IMAGE_OFFLOAD_COUNT_QUANTUM = 20
# a route's request-image budget when its model names none (dsh's pi-ai route defaults)
REQUEST_MAX_PIXELS = 2048 * 2048
REQUEST_MAX_BYTES = 1024 * 1024
_QUALITIES = (85, 75, 60)  # dsh 0.2's IMAGE_ENCODING_QUALITIES, for stored and request versions alike
_ID = re.compile(r"^sha256:([a-f0-9]{64})$")
_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}
_CONTROLS = re.compile(r"[\x00-\x1f\x7f]")


class AttachmentError(DshError):
    """An image that cannot be admitted or read; ``code`` is dsh's (``IMAGE_TOO_LARGE``, ``INVALID_IMAGE``,
    ``IMAGE_TYPE_MISMATCH``, ``IMAGE_DIMENSION_TOO_LARGE``, ``IMAGE_TOO_MANY_PIXELS``,
    ``ATTACHMENT_NOT_FOUND``, ``INVALID_ATTACHMENT_REF``, ``ATTACHMENT_WRITE_FAILED``)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def root() -> Path:
    """``$DSH_HOME/attachments/v1`` (dsh's root)."""
    from dsh_tui.paths import dsh_home

    return dsh_home() / "attachments" / "v1"


def media_type_for_path(path: str) -> str | None:
    """The image type a file name declares by its extension, or None."""
    return EXTENSIONS.get(os.path.splitext(path)[1].lower())


def sniff(data: bytes) -> str | None:
    """The image type the bytes' signature claims, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    return None


def display_name(value: str | None) -> str | None:
    """dsh's display name: the last path component, controls removed, trimmed, at most 255 characters."""
    if value is None:
        return None
    clean = _CONTROLS.sub("", value[max(value.rfind("/"), value.rfind("\\")) + 1:]).strip()[:255]
    return clean or None


def request_dimensions(width: int, height: int, max_pixels: int) -> tuple[int, int]:
    """Aspect-preserving integer dimensions within a total-pixel budget (dsh's ``requestImageDimensions``);
    small images are not enlarged."""
    scale = min(1.0, math.sqrt(max_pixels / (width * height)))
    if scale == 1:
        return width, height
    if width >= height:
        w = max(1, math.floor(width * scale))
        h = max(1, round(w * height / width))
        while w * h > max_pixels and w > 1:
            w -= 1
            h = max(1, round(w * height / width))
        return w, h
    h = max(1, math.floor(height * scale))
    w = max(1, round(h * width / height))
    while w * h > max_pixels and h > 1:
        h -= 1
        w = max(1, round(h * width / height))
    return w, h


# DeepSeek's vision-token grid (dsh 0.2's ``dsh-llm-deepseek`` image-tokens): a request image is sized so the
# provider keeps it whole within 1,024 tokens; 4096 px a side at most; 2 MiB encoded.
_PATCH = 14
_CELL = _PATCH * 3
_MAX_TOKENS = 1024
DEEPSEEK_REQUEST_MAX_BYTES = 2 * 1024 * 1024
DEEPSEEK_REQUEST_MAX_DIMENSION = 4096


def _ceil_div(value: int, divisor: int) -> int:
    return (value + divisor - 1) // divisor


def _grid_cells(padded: int) -> int:
    return _ceil_div(padded // _PATCH, 3)


def _long_edge(width: int, height: int, edge: int) -> tuple[int, int]:
    if edge >= max(width, height):
        return width, height
    if width >= height:
        return edge, max(1, round(edge * height / width))
    return max(1, round(edge * width / height)), edge


def deepseek_request_dimensions(width: int, height: int) -> tuple[int, int]:
    """dsh's ``deepSeekRequestImageDimensions`` (then its 4096 px per-side limit): the source when its
    patch-padded grid fits 1,024 tokens, else the source aspect at the solved grid's long edge."""
    padded_w = _ceil_div(width, _PATCH) * _PATCH
    padded_h = _ceil_div(height, _PATCH) * _PATCH
    gh, gw = _grid_cells(padded_h), _grid_cells(padded_w)
    if gh * (gw + 1) + 2 <= _MAX_TOKENS:
        w, h = width, height
    else:
        aspect = height / width
        ideal_w = math.sqrt((_MAX_TOKENS - 2) / aspect + 0.25) - 0.5
        ideal_h = ideal_w * aspect
        if ideal_w < 1:
            best_w, best_h = _CELL, ((_MAX_TOKENS - 2) // 2) * _CELL
        elif ideal_h < 1:
            best_w, best_h = ((_MAX_TOKENS - 2) - 1) * _CELL, _CELL
        else:
            scale = min(math.trunc(ideal_w) * _CELL / width, math.trunc(ideal_h) * _CELL / height)
            best_w = math.trunc(width * scale / _PATCH) * _PATCH
            best_h = math.trunc(height * scale / _PATCH) * _PATCH
        w, h = _long_edge(width, height, best_w if width >= height else best_h)
    if max(w, h) > DEEPSEEK_REQUEST_MAX_DIMENSION:
        w, h = _long_edge(width, height, DEEPSEEK_REQUEST_MAX_DIMENSION)
    return w, h


@dataclass
class _Decoded:
    image: Any  # PIL.Image.Image, orientation applied
    media_type: str
    width: int
    height: int
    animated: bool
    metadata: bool
    clean_mode: bool


def _open(data: bytes, declared: str | None) -> _Decoded:
    from PIL import Image, ImageOps

    Image.MAX_IMAGE_PIXELS = None  # our own limits apply (below), before the pixels are decoded
    if not data:
        raise AttachmentError("Image is empty.", "INVALID_IMAGE")
    try:
        img: Image.Image = Image.open(io.BytesIO(data))
        media = _FORMATS.get(img.format or "")
    except Exception as err:  # noqa: BLE001 - any decoder failure is an invalid image
        raise AttachmentError("Unsupported or malformed image data.", "INVALID_IMAGE") from err
    if media is None:
        raise AttachmentError("Unsupported or malformed image data.", "INVALID_IMAGE")
    if declared is not None and media != declared:
        raise AttachmentError("Declared image type does not match its bytes.", "IMAGE_TYPE_MISMATCH")
    exif = img.getexif() if hasattr(img, "getexif") else {}
    orientation = exif.get(0x0112) if exif else None
    width, height = img.size
    if orientation is not None and orientation >= 5:
        width, height = height, width
    if width * height > MAX_IMAGE_PIXELS:
        raise AttachmentError("Image exceeds the configured decoded-pixel limit.", "IMAGE_TOO_MANY_PIXELS")
    if max(width, height) > MAX_IMAGE_DIMENSION:
        raise AttachmentError("Image exceeds the configured per-side pixel limit.", "IMAGE_DIMENSION_TOO_LARGE")
    animated = getattr(img, "n_frames", 1) > 1
    metadata = bool(exif) or "icc_profile" in img.info or "exif" in img.info or "xmp" in img.info \
        or any(k in img.info for k in ("comment", "XML:com.adobe.xmp"))
    clean_mode = img.mode in ("RGB", "RGBA", "L", "LA", "P")
    try:
        img.load()
        img = ImageOps.exif_transpose(img) or img
    except Exception as err:  # noqa: BLE001 - truncated or corrupt pixel data
        raise AttachmentError("Unsupported or malformed image data.", "INVALID_IMAGE") from err
    return _Decoded(img, media, width, height, animated, metadata, clean_mode)


def _has_alpha(img: Any) -> bool:
    return img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info)


def _encode(img: Any, size: tuple[int, int], max_bytes: int) -> tuple[bytes, str, int, int]:
    """dsh 0.2's ladder (``encodingLadder``): resize ``img`` to ``size``, then WebP when it has transparency, else
    JPEG, at quality 85, 75, 60: the first that fits ``max_bytes``, else the smallest."""
    from PIL import Image

    alpha = _has_alpha(img)
    frame = img.convert("RGBA" if alpha else "RGB")
    if frame.size != size:
        frame = frame.resize(size, Image.Resampling.LANCZOS)
    fmt = "WEBP" if alpha else "JPEG"
    smallest: bytes | None = None
    for quality in _QUALITIES:
        out = io.BytesIO()
        frame.save(out, fmt, quality=quality)
        data = out.getvalue()
        if len(data) <= max_bytes:
            return data, _FORMATS[fmt], size[0], size[1]
        if smallest is None or len(data) < len(smallest):
            smallest = data
    assert smallest is not None
    return smallest, _FORMATS[fmt], size[0], size[1]


def normalize(data: bytes, declared: str | None = None) -> tuple[bytes, str, int, int, tuple[int, int]]:
    """(normalized bytes, media type, width, height, source dimensions) for one submitted image; raises
    ``AttachmentError`` for what dsh refuses."""
    if len(data) > MAX_IMAGE_BYTES:
        raise AttachmentError("Image exceeds the configured byte limit.", "IMAGE_TOO_LARGE")
    decoded = _open(data, declared)
    size = request_dimensions(decoded.width, decoded.height, NORMALIZED_MAX_PIXELS)
    if (decoded.media_type != "image/gif" and not decoded.animated and not decoded.metadata
            and decoded.clean_mode and len(data) <= NORMALIZED_MAX_BYTES
            and size == (decoded.width, decoded.height)):
        return data, decoded.media_type, decoded.width, decoded.height, (decoded.width, decoded.height)
    try:
        out, media, w, h = _encode(decoded.image, size, NORMALIZED_MAX_BYTES)
    except AttachmentError:
        raise
    except Exception as err:  # noqa: BLE001 - e.g. a 16-bit PNG Pillow cannot convert
        raise AttachmentError("The image could not be converted to the normalized 8-bit sRGB form.",
                              "ATTACHMENT_WRITE_FAILED") from err
    return out, media, w, h, (decoded.width, decoded.height)


def object_path(ref: dict, base: Path | None = None) -> Path:
    match = _ID.match(str(ref.get("attachmentId", "")))
    if match is None:
        raise AttachmentError("Attachment reference is invalid.", "INVALID_ATTACHMENT_REF")
    digest = match.group(1)
    return (base or root()) / "objects" / digest[:2] / digest


def save_image(data: bytes, media_type: str | None = None, name: str | None = None,
               base: Path | None = None) -> dict:
    """Admit, normalize and store one image; returns its reference (the ``attachment`` of an image block)."""
    from dsh_tui.store.fsio import private_dir, write_atomic

    normalized, media, width, height, source = normalize(data, media_type)
    digest = hashlib.sha256(normalized).hexdigest()
    ref: dict[str, Any] = {"attachmentId": f"sha256:{digest}", "mediaType": media, "bytes": len(normalized),
                           "width": width, "height": height}
    clean = display_name(name)
    if clean is not None:
        ref["name"] = clean
    if source != (width, height):
        ref["originalDimensions"] = {"width": source[0], "height": source[1]}
    path = object_path(ref, base)
    if not path.exists():
        try:
            private_dir(path.parent)
            write_atomic(path, normalized, mode=0o600)
        except OSError as err:
            raise AttachmentError(f"Image could not be stored: {err.strerror or err}",
                                  "ATTACHMENT_WRITE_FAILED") from err
    return ref


def load(ref: dict, base: Path | None = None) -> bytes:
    """The stored normalized bytes of ``ref`` (digest checked)."""
    path = object_path(ref, base)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise AttachmentError(f"Attachment {ref.get('attachmentId')} is not in the local store.",
                              "ATTACHMENT_NOT_FOUND") from err
    if f"sha256:{hashlib.sha256(data).hexdigest()}" != ref.get("attachmentId"):
        raise AttachmentError(f"Attachment {ref.get('attachmentId')} does not match its digest.",
                              "ATTACHMENT_NOT_FOUND")
    return data


@dataclass(frozen=True)
class RequestImage:
    """One image as a model request carries it."""

    data: bytes
    media_type: str
    width: int
    height: int


def request_image(ref: dict, max_pixels: int | None = REQUEST_MAX_PIXELS, max_bytes: int = REQUEST_MAX_BYTES,
                  base: Path | None = None) -> RequestImage:
    """The request version of a stored image for a route's pixel and byte budget (the stored bytes when they
    already fit). ``max_pixels`` None: DeepSeek's token grid (``deepseek_request_dimensions``)."""

    def target(w: int, h: int) -> tuple[int, int]:
        return deepseek_request_dimensions(w, h) if max_pixels is None else request_dimensions(w, h, max_pixels)

    data = load(ref, base)
    width, height = int(ref.get("width") or 0), int(ref.get("height") or 0)
    size = target(width, height) if width and height else (width, height)
    if size == (width, height) and len(data) <= max_bytes:
        return RequestImage(data, str(ref.get("mediaType")), width, height)
    decoded = _open(data, None)
    out, media, w, h = _encode(decoded.image, target(decoded.width, decoded.height), max_bytes)
    return RequestImage(out, media, w, h)


def _access_text(ref: dict, base: Path | None = None) -> str | None:
    """dsh's ``normalizedAccessText``: where the stored copy can be read, or None when it is not here."""
    import json

    try:
        path = object_path(ref, base)
        if not path.is_file():
            return None
    except (AttachmentError, OSError):
        return None
    ext = {"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp", "image/gif": ".gif"}.get(
        str(ref.get("mediaType")), "")
    return (f" Normalized copy (read-only; may be resized or re-encoded): {json.dumps(str(path), ensure_ascii=False)}"
            f" ({ref.get('width')}x{ref.get('height')}px, {ref.get('mediaType')}). Source dimensions, format, and byte "
            f"size may differ. Copy to a writable path ending in {ext} before editing.")


def _identity(ref: dict) -> str:
    import json

    ident = str(ref.get("attachmentId"))
    return ident if ref.get("name") is None else f"{json.dumps(ref['name'], ensure_ascii=False)} ({ident})"


def handle_text(ref: dict, version: RequestImage, base: Path | None = None) -> str:
    """dsh's model-facing handle shown before each image (``requestImageHandleText``): with the read-only path
    of the stored copy when it is on this machine (it always is, unless the store lost it)."""
    preview = f"Image {_identity(ref)}; request preview {version.width}x{version.height}px."
    access = _access_text(ref, base)
    if access is None:
        return f"{preview} It may be resized or re-encoded; source dimensions, format, and byte size may differ."
    return preview + access


def offloaded_text(ref: dict, base: Path | None = None) -> str:
    """What the model sees for an image left out to fit the request's image budget (``offloadedImageText``)."""
    identity = f"image omitted to fit request image limits; {_identity(ref)}."
    access = _access_text(ref, base)
    if access is None:
        return f"[{identity} No local normalized image path is available; ask the user to attach it again if needed.]"
    return f"[{identity}{access}]"


def offload_count(sizes: list[int], max_bytes: int | None = None, max_images: int | None = None) -> int:
    """How many of the oldest occurrences (``sizes``: each one's represented bytes, oldest first) to omit so the
    rest fit: whole quanta of excess bytes and of excess images, as dsh removes them."""
    max_bytes = MAX_INLINE_REQUEST_BYTES if max_bytes is None else max_bytes
    max_images = MAX_IMAGES_PER_REQUEST if max_images is None else max_images
    drop = 0
    if len(sizes) > max_images:
        excess = len(sizes) - max_images
        drop = min(len(sizes), -(-excess // IMAGE_OFFLOAD_COUNT_QUANTUM) * IMAGE_OFFLOAD_COUNT_QUANTUM)
    total = sum(sizes[drop:])
    if total > max_bytes:
        target = -(-(total - max_bytes) // INLINE_OFFLOAD_QUANTUM) * INLINE_OFFLOAD_QUANTUM
        removed = 0
        while drop < len(sizes) and removed < target:
            removed += sizes[drop]
            drop += 1
    return drop


def text_only_text(ref: dict) -> str:
    """What a text-only model sees instead of an image (dsh's ``textOnlyImageText``)."""
    return f"[image omitted because this model accepts text only; attachment sha256:{str(ref.get('attachmentId', ''))[7:15]}]"


def has_image(content: Any) -> bool:
    """Whether message content holds an image block (nested tool results included)."""
    for block in content or ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "image":
            return True
        if block.get("type") == "tool-result" and has_image(block.get("content")):
            return True
    return False
