"""Looks: a SillyTavern folder's backgrounds, themes and sprite packs imported; a chat's
own background and CSS; the expression a chat's character wears after each reply, or as
`/expression` set it."""

from __future__ import annotations

import io
import json
from importlib.resources import files
from pathlib import Path

import pytest
from PIL import Image

from taverna.engine.script import ScriptError
from taverna.errors import NotFound, TavernaError
from taverna.model.chat import CharacterRef, NodeRole
from taverna.services.chats.looks import ChatLooks
from taverna.services.chats.service import ChatService
from taverna.services.interchange.library_import import LibraryImport
from taverna.services.library.looks import LooksLibrary
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.services.library.sprites import SpriteLibrary, checked_label, sprite_label
from taverna.services.scripts.runner import ScriptService
from taverna.store.sql import SqlStore

CARD = "Ione Calder.png"
NAME = "Ione Calder"


def picture(colour: str, kind: str = "PNG") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 12), colour).save(out, kind)
    return out.getvalue()


def user_folder(tmp_path: Path) -> Path:
    """A SillyTavern user folder: one card with its sprite folder (named after the card's
    name), two backgrounds, a theme, and settings choosing both."""
    folder = tmp_path / "default-user"
    characters = folder / "characters"
    sprites = characters / NAME
    sprites.mkdir(parents=True)
    (characters / CARD).write_bytes(files("taverna.data").joinpath(CARD).read_bytes())
    (sprites / "joy.png").write_bytes(picture("yellow"))
    (sprites / "joy-2.png").write_bytes(picture("orange"))
    (sprites / "Neutral.PNG").write_bytes(picture("grey"))
    (sprites / "anger.jpg").write_bytes(picture("red", "JPEG"))
    (sprites / "broken.png").write_bytes(b"not a picture")
    (sprites / "notes.txt").write_text("ignored")
    (characters / "Nobody").mkdir()
    (characters / "Nobody" / "joy.png").write_bytes(picture("blue"))
    backgrounds = folder / "backgrounds"
    backgrounds.mkdir()
    (backgrounds / "tavern.jpg").write_bytes(picture("brown", "JPEG"))
    (backgrounds / "night.png").write_bytes(picture("black"))
    themes = folder / "themes"
    themes.mkdir()
    theme = {
        "name": "Midnight",
        "main_text_color": "rgba(230, 230, 220, 1)",
        "custom_css": "@import url(https://x.example/a.css); .mes { border: 0; }",
    }
    (themes / "Midnight.json").write_text(json.dumps(theme))
    (themes / "broken.json").write_text("[1, 2]")
    settings = {
        "background": {"name": "night.png", "url": 'url("backgrounds/night.png")'},
        "power_user": {
            "theme": "Midnight",
            "custom_css": "body { background: url(backgrounds/x.png); color: teal; }",
        },
    }
    (folder / "settings.json").write_text(json.dumps(settings))
    return folder


def test_a_folder_brings_its_backgrounds_themes_and_sprite_packs(
    store: SqlStore, tmp_path: Path
) -> None:
    lib = LibraryService(store)
    report = LibraryImport(lib).import_path(user_folder(tmp_path))
    kinds = sorted((s.kind, s.name) for s in report.stored if s.kind != "character")
    assert ("background", "night.png") in kinds and ("background", "tavern.jpg") in kinds
    assert ("theme", "Midnight") in kinds and ("sprites", NAME) in kinds
    skipped = {(Path(s.path).name, s.code) for s in report.skipped}
    assert ("broken.png", "picture_unreadable") in skipped
    assert ("broken.json", "theme_not_object") in skipped
    assert ("Nobody", "sprites_without_card") in skipped
    assert not any(s.code == "not_imported" and "backgrounds" in s.path for s in report.skipped)

    card = lib.find(LibraryKind.CHARACTER, NAME)
    assert card is not None
    sprites = SpriteLibrary(store).sprites(card.id)
    assert sorted(sprites) == ["anger", "joy", "neutral"]
    assert all(url.startswith("/api/images/") for url in sprites.values())
    # joy.png, not joy-2.png, is the pack's joy
    joy = SpriteLibrary(store).pictures.load(sprites["joy"].rsplit("/", 1)[1])[0]
    assert Image.open(io.BytesIO(joy)).getpixel((0, 0)) == (255, 255, 0)

    looks = LooksLibrary(store).global_looks()
    night = next(b for b in LooksLibrary(store).backgrounds() if b.name == "night.png")
    assert looks.background == night.url  # the background settings.json had chosen
    assert looks.theme == "Midnight" and looks.colours == {"--text": "rgba(230, 230, 220, 1)"}
    # the settings' own CSS, its SillyTavern picture path taken out
    assert "color: teal" in looks.css.css and "backgrounds/" not in looks.css.css
    assert looks.css.removed == ("url(backgrounds/x.png)",)


def test_a_theme_applied_brings_its_css_cleaned(store: SqlStore) -> None:
    looks = LooksLibrary(store)
    looks.import_theme(
        json.dumps(
            {"name": "Plain", "custom_css": "@import 'https://x.example/a.css'; p{}"}
        ).encode(),
        file="Plain.json",
    )
    applied = looks.apply_theme("Plain")
    assert applied.theme == "Plain" and applied.css.css == "p{}"
    with pytest.raises(NotFound):
        looks.apply_theme("Missing")
    plain = looks.apply_theme("")  # no theme: the CSS stays
    assert plain.theme == "" and plain.css.css == "p{}"


def test_global_background_and_css(store: SqlStore) -> None:
    looks = LooksLibrary(store)
    found = looks.add_background(picture("green"), "field.png")
    assert looks.set_global(background=found.url).background == found.url
    assert looks.set_global(custom_css="p { color: red }").css.css == "p { color: red }"
    assert looks.global_looks().background == found.url  # the CSS change kept it
    with pytest.raises(NotFound):
        looks.set_global(background="/api/images/" + "0" * 64 + ".png")
    with pytest.raises(NotFound):
        looks.set_global(background="https://x.example/a.png")
    looks.delete_background(found.id)
    assert looks.global_looks().background is None and looks.backgrounds() == []


def _chat(chats: ChatService, lib: LibraryService) -> str:
    card = lib.import_bytes(files("taverna.data").joinpath(CARD).read_bytes(), CARD)
    out = chats.create_chat(
        "story",
        characters=[CharacterRef(NAME, card.id)],
        user_name="Ann",
        greetings=["Welcome aboard."],
        greeting_speaker=NAME,
    )
    return out.chat.id


def test_a_chat_has_its_own_background_and_css(chats: ChatService) -> None:
    lib = LibraryService(chats.store)
    chat_id = _chat(chats, lib)
    looks = ChatLooks(chats, lib)
    found = LooksLibrary(chats.store).add_background(picture("navy"), "sea.png")
    revision = chats.get_chat(chat_id).revision
    chat = looks.set_chat_looks(
        chat_id, revision=revision, background=found.url, custom_css="@import 'x'; p{}"
    )
    # SillyTavern's locked background, as it writes it
    assert chat.metadata["custom_background"] == f'url("{found.url}")'
    own = looks.chat_looks(chat)
    assert own.background == found.url and own.css.css == "p{}"
    chat = looks.set_chat_looks(chat_id, revision=chat.revision, background=None, custom_css="")
    assert "custom_background" not in chat.metadata and "custom_css" not in chat.metadata
    # A chat imported from SillyTavern locks a background by its path there: the
    # background of that name, imported from its backgrounds/ folder, is shown.
    chat = chats.update_metadata(
        chat_id, {"custom_background": 'url("backgrounds/sea.png")'}, revision=chat.revision
    ).chat
    assert looks.chat_looks(chat).background == found.url
    chat = chats.update_metadata(
        chat_id, {"custom_background": 'url("backgrounds/gone.png")'}, revision=chat.revision
    ).chat
    assert looks.chat_looks(chat).background is None


def test_the_expression_follows_each_reply_and_expression_holds_until_the_next(
    chats: ChatService,
) -> None:
    lib = LibraryService(chats.store)
    chat_id = _chat(chats, lib)
    card = lib.find(LibraryKind.CHARACTER, NAME)
    assert card is not None
    sprites = SpriteLibrary(chats.store)
    sprites.add(card.id, "joy", picture("yellow"), file="joy.png")
    sprites.add(card.id, "neutral", picture("grey"), file="neutral.png")
    looks = ChatLooks(chats, lib)

    first = looks.expression(chat_id)
    assert (first.character, first.label, first.source, first.sprite) == (
        NAME,
        "neutral",
        "reply",
        "neutral",
    )
    assert first.labels == ("joy", "neutral")

    revision = chats.get_chat(chat_id).revision
    out = chats.append(chat_id, NodeRole.USER, "A joke for you.", revision=revision)
    out = chats.append(
        chat_id,
        NodeRole.ASSISTANT,
        "She laughs and grins.",
        revision=out.chat.revision,
        speaker=NAME,
    )
    now = looks.expression(chat_id)
    assert (now.label, now.source, now.sprite) == ("amusement", "reply", "joy")
    assert now.url == sprites.sprites(card.id)["joy"]

    run = ScriptService(chats).run("/expression anger", chat_id=chat_id)
    assert run.result.pipe == "anger"
    held = looks.expression(chat_id)
    assert (held.label, held.source, held.sprite) == ("anger", "set", "neutral")

    revision = chats.get_chat(chat_id).revision
    out = chats.append(chat_id, NodeRole.USER, "And?", revision=revision)
    chats.append(
        chat_id, NodeRole.ASSISTANT, "她开心地笑了。", revision=out.chat.revision, speaker=NAME
    )
    after = looks.expression(chat_id)
    assert (after.label, after.source) == ("joy", "reply")


def test_expression_commands(chats: ChatService) -> None:
    lib = LibraryService(chats.store)
    chat_id = _chat(chats, lib)
    scripts = ScriptService(chats)
    with pytest.raises(ScriptError) as failed:
        scripts.run("/expression smugness", chat_id=chat_id)
    assert failed.value.code == "no_expression_named"
    with pytest.raises(ScriptError):
        scripts.run("/expression name=Somebody joy", chat_id=chat_id)
    with pytest.raises(ScriptError):
        scripts.run("/expression joy")  # no chat
    assert scripts.run("/sprite Joy", chat_id=chat_id).result.pipe == "joy"
    assert scripts.run("/expression-classify 他愤怒地瞪着你。").result.pipe == "anger"
    assert len(json.loads(scripts.run("/expression-list").result.pipe)) == 28


def test_sprite_labels_from_file_names() -> None:
    assert sprite_label("Joy.png") == "joy"
    assert sprite_label("joy-2.webp") == "joy"
    assert sprite_label("notes.txt") is None
    assert sprite_label("../x/joy.png") == "joy"
    with pytest.raises(TavernaError):
        checked_label("../../etc")


def test_a_folder_of_cards_brings_the_sprite_pack_beside_a_card(
    store: SqlStore, tmp_path: Path
) -> None:
    folder = tmp_path / "cards"
    (folder / NAME).mkdir(parents=True)
    (folder / "Ione.png").write_bytes(files("taverna.data").joinpath(CARD).read_bytes())
    (folder / NAME / "surprise.png").write_bytes(picture("white"))
    (folder / NAME / "sadness.webp").write_bytes(picture("blue", "WEBP"))
    lib = LibraryService(store)
    report = LibraryImport(lib).import_path(folder)
    assert [s.kind for s in report.stored] == ["character", "sprites"]
    assert report.skipped == []  # the pack's pictures were not taken for cards
    card = lib.find(LibraryKind.CHARACTER, NAME)
    assert card is not None
    assert sorted(SpriteLibrary(store).sprites(card.id)) == ["sadness", "surprise"]
