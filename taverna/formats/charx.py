"""CHARX character cards: a zip holding `card.json` (a V3 card) and its asset files.

Reading is bounded: the entry count, each entry's size and the total unpacked size are
capped, and sizes are enforced while unpacking (a zip's declared sizes may lie), so a
zip bomb ends in a FormatError, not in exhausted memory.
"""

from __future__ import annotations

import io
import zipfile
import zlib

from taverna.errors import FormatError, FormatWarning, raw_words
from taverna.formats import json_text
from taverna.formats.card_json import card_from_json, card_to_json, upgraded, with_fields
from taverna.formats.png_card import check_picture_size
from taverna.model.character import SPEC_V3, CardFile, Character

MAX_ENTRIES = 4096
MAX_ENTRY_BYTES = 64 * 1024 * 1024
MAX_TOTAL_BYTES = 256 * 1024 * 1024
_CHUNK = 1024 * 1024


def _unpack(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int, file: str | None
) -> bytes:
    limit = min(MAX_ENTRY_BYTES, budget)
    if info.file_size > limit:
        raise FormatError(
            f"unpacks to {info.file_size:,} bytes, more than the {limit:,} accepted",
            file=file,
            field=info.filename,
            code="unpacks_to_bytes_more_than",
            params={"file_size": format(info.file_size, ","), "limit": format(limit, ",")},
        )
    parts: list[bytes] = []
    size = 0
    with archive.open(info) as stream:
        while True:
            block = stream.read(_CHUNK)
            if not block:
                break
            size += len(block)
            if size > limit:
                raise FormatError(
                    f"unpacks to more than the {limit:,} bytes accepted (zip bomb?)",
                    file=file,
                    field=info.filename,
                    code="unpacks_to_more_than_bytes",
                    params={"limit": format(limit, ",")},
                )
            parts.append(block)
    return b"".join(parts)


def _icon_path(character: Character, names: list[str]) -> str | None:
    """The zip entry of the card's icon: the first `icon` asset whose uri matches (§5)."""
    for asset in character.assets or []:
        if asset.type != "icon":
            continue
        uri = asset.uri.split("://", 1)[1] if "://" in asset.uri else asset.uri
        if not uri or uri.startswith("ccdefault:"):
            continue
        for name in names:
            if name.endswith(uri):
                return name
    return None


def read_charx(
    data: bytes, *, file: str | None = None, warnings: list[FormatWarning] | None = None
) -> CardFile:
    """A CHARX file: the character from `card.json`, the icon as avatar, other files as assets."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise FormatError(
            f"not a readable zip file: {exc}",
            file=file,
            code="not_readable_zip_file",
            params=raw_words(exc),
        ) from None
    with archive:
        infos = [i for i in archive.infolist() if not i.is_dir()]
        if len(infos) > MAX_ENTRIES:
            raise FormatError(
                f"zip has {len(infos):,} files, more than {MAX_ENTRIES:,}",
                file=file,
                code="zip_has_files_more_than",
                params={"n": format(len(infos), ","), "max_entries": format(MAX_ENTRIES, ",")},
            )
        files: dict[str, bytes] = {}
        budget = MAX_TOTAL_BYTES
        try:
            for info in infos:
                if info.filename.startswith("__MACOSX/"):
                    continue
                content = _unpack(archive, info, budget, file)
                budget -= len(content)
                files[info.filename] = content
        except FormatError:
            raise
        except (zipfile.BadZipFile, RuntimeError, NotImplementedError, zlib.error, OSError,
                EOFError, ValueError) as exc:  # fmt: skip
            raise FormatError(
                f"broken zip file: {exc}",
                file=file,
                code="broken_zip_file",
                params=raw_words(exc),
            ) from None
    card_name = next((name for name in files if name.endswith("card.json")), None)
    if card_name is None:
        raise FormatError("CHARX holds no card.json", file=file, code="charx_holds_no_card_json")
    doc = json_text.loads(files.pop(card_name), file=file, field=card_name)
    if not isinstance(doc, dict) or "spec" not in doc:
        raise FormatError(
            "card.json is not a V2/V3 card (no `spec`)",
            file=file,
            field=card_name,
            code="card_json_is_not_v2",
        )
    character = card_from_json(doc, file=file, field=card_name, warnings=warnings)
    icon = _icon_path(character, list(files))
    avatar = files.pop(icon) if icon else None
    if avatar is not None:
        check_picture_size(avatar, file=file)
    assets = dict(files)
    if icon and avatar is not None:
        assets = {icon: avatar, **assets}
    return CardFile(character=character, avatar=avatar, assets=assets)


DEFAULT_ICON_PATH = "assets/icon/images/main.png"


def write_charx(card: CardFile) -> bytes:
    """A CHARX zip: `card.json` first, then every asset under its own path.

    A card whose avatar is not among its zip assets (one read from a PNG, say) gets it
    as `assets/icon/images/main.png`, listed as the `main` icon in `data.assets`, since
    that is how a CHARX reader finds the picture.
    """
    # A CHARX holds a V3 card (its reader needs `spec`): a V1 card is upgraded.
    character = upgraded(card.character, SPEC_V3)
    assets = dict(card.assets)
    if card.avatar is not None and _icon_path(character, list(assets)) is None:
        kept = [
            a.to_json()
            for a in character.assets or []
            if not (a.type == "icon" and a.uri.startswith("ccdefault:"))
        ]
        icon = {
            "type": "icon",
            "uri": f"embeded://{DEFAULT_ICON_PATH}",
            "name": "main",
            "ext": "png",
        }
        character = with_fields(character, assets=[icon, *kept])
        assets = {DEFAULT_ICON_PATH: card.avatar, **assets}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        doc = card_to_json(character)
        archive.writestr("card.json", json_text.dumps(doc, indent=4).encode("utf-8"))
        for name, content in assets.items():
            archive.writestr(name, content)
    return out.getvalue()
