"""A SillyTavern data folder's looks: its `backgrounds/` pictures, its `themes/*.json`,
the background `settings.json` had chosen, and each card's expression sprites from
`characters/<card name>/` (formats-extensions.md §4: the folder is named after the card's
name, not its file; a folder named after the file is taken too)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from taverna.engine.expressions import LABELS
from taverna.errors import TavernaError
from taverna.formats import json_text
from taverna.services.interchange.report import ImportReport, Skipped, StoredItem
from taverna.services.library.active_settings import set_active
from taverna.services.library.looks import BACKGROUND, BACKGROUND_KIND, THEME_KIND, LooksLibrary
from taverna.services.library.service import LibraryService
from taverna.services.library.sprites import SPRITES_KIND, SpriteLibrary, sprite_label

LOOKS_FOLDERS = ("backgrounds", "themes")
_PICTURES = (".png", ".jpg", ".jpeg", ".gif", ".webp")


def _files(folder: Path, suffixes: tuple[str, ...]) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in suffixes)


def looks_files(folder: Path) -> list[Path]:
    """The files of a data folder this import reads (for the progress count)."""
    sprites = [
        file
        for sub in sorted((folder / "characters").glob("*/"))
        for file in _files(sub, _PICTURES)
    ]
    return [
        *_files(folder / "backgrounds", _PICTURES),
        *_files(folder / "themes", (".json",)),
        *sprites,
    ]


def import_backgrounds(lib: LibraryService, folder: Path) -> ImportReport:
    """Each picture of `backgrounds/` as a background of the same name."""
    looks = LooksLibrary(lib.store, owner=lib.owner)
    report = ImportReport()
    for path in _files(folder, _PICTURES):
        try:
            found = looks.add_background(path.read_bytes(), path.name)
        except (TavernaError, OSError) as exc:
            report.skipped.append(_skipped(path, exc))
            continue
        report.stored.append(StoredItem(BACKGROUND_KIND, found.id, found.name, file=str(path)))
    return report


def import_themes(lib: LibraryService, folder: Path) -> ImportReport:
    """Each theme file of `themes/`, kept whole."""
    looks = LooksLibrary(lib.store, owner=lib.owner)
    report = ImportReport()
    for path in _files(folder, (".json",)):
        try:
            theme = looks.import_theme(path.read_bytes(), file=str(path), name=path.stem)
        except (TavernaError, OSError) as exc:
            report.skipped.append(_skipped(path, exc))
            continue
        report.stored.append(StoredItem(THEME_KIND, theme.name, theme.name, file=str(path)))
    return report


def choose_settings_background(lib: LibraryService, settings: Path) -> None:
    """The background `settings.json` had chosen (`background.name`), when it was imported
    from `backgrounds/`; SillyTavern's own paths cannot be shown, so only its name counts."""
    try:
        doc = json_text.loads(settings.read_bytes(), file=str(settings))
    except (TavernaError, OSError):
        return  # the settings import says what was wrong with the file
    chosen = doc.get(BACKGROUND) if isinstance(doc, dict) else None
    name = chosen.get("name") if isinstance(chosen, Mapping) else None
    if not isinstance(name, str) or not name:
        return
    looks = LooksLibrary(lib.store, owner=lib.owner)
    for background in looks.backgrounds():
        if background.name == name:
            value = {"name": name, "url": background.url}
            set_active(lib.store, BACKGROUND, value, lib.owner)
            return


def sprite_packs(folder: Path) -> list[Path]:
    """The folders directly in `folder` that hold a sprite pack: a picture named by one of
    the classifier's expressions (`joy.png`) among them."""
    if not folder.is_dir():
        return []
    return [
        sub
        for sub in sorted(p for p in folder.iterdir() if p.is_dir())
        if any(sprite_label(f.name) in LABELS for f in _files(sub, _PICTURES))
    ]


def import_sprites(
    lib: LibraryService,
    characters: Path,
    cards: Mapping[str, StoredItem],
    *,
    packs: list[Path] | None = None,
) -> ImportReport:
    """The sprite folders beside the cards (`characters/<name>/<label>.png`; `packs`:
    only these folders); `cards`: the cards just imported, by file stem. A folder of no
    card is listed as left out."""
    sprites = SpriteLibrary(lib.store, owner=lib.owner)
    by_name = {item.name: item for item in cards.values()}
    report = ImportReport()
    if not characters.is_dir():
        return report
    if packs is None:
        packs = sorted(p for p in characters.iterdir() if p.is_dir())
    for folder in packs:
        files = _files(folder, _PICTURES)
        if not files:
            continue
        card = by_name.get(folder.name) or cards.get(folder.name)
        if card is None:
            report.skipped.append(
                Skipped(str(folder), "sprites of no imported card", "sprites_without_card")
            )
            continue
        pictures: dict[str, bytes] = {}
        paths: dict[str, Path] = {}
        # `joy.png` before `joy-2.png`: a pack's first picture of an expression is its sprite
        for path in sorted(files, key=lambda f: (f.stem.lower() != sprite_label(f.name), f.name)):
            label = sprite_label(path.name)
            if label is None or label in pictures:
                continue
            try:
                pictures[label] = path.read_bytes()
                paths[label] = path
            except OSError as exc:
                report.skipped.append(_skipped(path, exc))
        failed = sprites.add_many(card.id, pictures)
        report.skipped += [Skipped.because(str(paths[label]), exc) for label, exc in failed]
        if len(failed) < len(pictures):
            report.stored.append(StoredItem(SPRITES_KIND, card.id, card.name, file=str(folder)))
    return report


def _skipped(path: Path, exc: Exception) -> Skipped:
    if isinstance(exc, TavernaError):
        return Skipped.because(str(path), exc)
    reason = getattr(exc, "strerror", None) or str(exc)
    return Skipped(str(path), f"cannot read ({reason})", "cannot_read", {"strerror": reason})
