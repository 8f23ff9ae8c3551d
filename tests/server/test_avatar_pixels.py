"""Avatars of characters and personas have the pixel limit of a chat's pictures: a picture
of 20,000 x 20,000 (a few kilobytes of PNG) is refused on upload and in an imported card
(PNG or CHARX), naming the file, and nothing is stored."""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib

from fastapi.testclient import TestClient

from taverna.formats.card_json import card_to_json
from taverna.formats.png_card import MAX_IMAGE_PIXELS, encode_chunk
from taverna.formats.png_chunks import rebuild
from taverna.model.character import Character
from taverna.services.chats.images import MAX_PIXELS

SIDE = 20_000
V3 = {
    "spec": "chara_card_v3",
    "spec_version": "3.0",
    "data": {
        "name": "Giant",
        "description": "On a wide canvas.",
        "first_mes": "Hello.",
        "assets": [
            {
                "type": "icon",
                "uri": "embeded://assets/icon/images/main.png",
                "name": "main",
                "ext": "png",
            }
        ],
    },
}


def huge_png(side: int = SIDE) -> bytes:
    """A real black picture of side x side, one bit a pixel: its rows compress to nothing."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    row = b"\x00" * (1 + (side + 7) // 8)
    pixels = zlib.compressobj(9)
    packed = b"".join(pixels.compress(row) for _ in range(side)) + pixels.flush()
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", packed) + chunk(b"IEND", b"")
    )


def _refused(response: object, file: str) -> None:
    assert response.status_code == 422, response.text  # type: ignore[attr-defined]
    detail = response.json()["detail"]  # type: ignore[attr-defined]
    assert detail["code"] == "picture_is_too_large_x"
    assert detail["params"] == {"width": str(SIDE), "height": str(SIDE)}
    assert detail["file"] == file


def test_the_limit_is_the_pictures_one() -> None:
    assert MAX_IMAGE_PIXELS == MAX_PIXELS and SIDE * SIDE > MAX_PIXELS


def test_a_huge_avatar_upload_is_refused(client: TestClient) -> None:
    picture = huge_png()
    assert len(picture) < 200_000
    card = client.post("/api/characters", json={"name": "Wren"}).json()
    before = client.get(f"/api/characters/{card['id']}/avatar").content
    sent = client.post(
        f"/api/characters/{card['id']}/avatar", files={"file": ("big.png", picture, "image/png")}
    )
    _refused(sent, "big.png")
    assert client.get(f"/api/characters/{card['id']}/avatar").content == before
    persona = client.post("/api/personas", json={"name": "Tam"}).json()
    sent = client.post(
        f"/api/personas/{persona['id']}/avatar", files={"file": ("big.png", picture, "image/png")}
    )
    _refused(sent, "big.png")


def test_a_card_on_a_huge_picture_is_refused(client: TestClient) -> None:
    doc = card_to_json(Character(name="Giant", description="On a wide canvas."))
    card = rebuild(huge_png(), [("chara", encode_chunk(doc))], file="giant.png")
    sent = client.post("/api/characters/import", files={"file": ("giant.png", card, "image/png")})
    _refused(sent, "giant.png")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("card.json", json.dumps(V3))
        archive.writestr("assets/icon/images/main.png", huge_png())
    sent = client.post(
        "/api/characters/import",
        files={"file": ("giant.charx", out.getvalue(), "application/zip")},
    )
    _refused(sent, "giant.charx")
    names = [c["name"] for c in client.get("/api/characters").json()]
    assert "Giant" not in names
