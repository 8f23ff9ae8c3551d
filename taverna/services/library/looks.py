"""How the page looks for one person: the background picture, custom CSS and the theme
every chat shows unless the chat has its own (see `chats/looks.py`), the backgrounds to
choose from and the themes imported from SillyTavern.

Kept where SillyTavern keeps them, so a `settings.json` brings them over: the custom CSS
and the theme's name in the power-user settings (`power_user.custom_css`,
`power_user.theme`), the background as `settings.json`'s `background` ({name, url}).
A background is a picture of the library (`pictures.py`) with a name; a theme is its
SillyTavern file, kept whole. Custom CSS is cleaned (`formats/custom_css.py`) when it is
read, so CSS that came in by any door is applied safely.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any
from urllib.parse import unquote

from taverna.errors import NotFound, TavernaError
from taverna.formats.custom_css import MAX_CSS, CleanCss, allowed_picture, clean_css
from taverna.formats.st_theme import Theme, read_theme
from taverna.services.library.active_settings import ACTIVE, SETTINGS_KIND, set_active
from taverna.services.library.pictures import PictureStore
from taverna.services.library.service import LibraryService
from taverna.store import Store

BACKGROUND_KIND = "background"
THEME_KIND = "theme"
POWER_USER = "power_user"
BACKGROUND = "background"
NAME_MAX = 200  # the longest background name kept


@dataclass(frozen=True, slots=True)
class Background:
    """A background to choose: its name (the file it came from) and its picture's URL."""

    id: str
    name: str
    url: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "url": self.url}


@dataclass(frozen=True, slots=True)
class Looks:
    """What the page applies: a background URL (None: none), custom CSS as cleaned (with
    what was taken out), the theme's name and the page colours it sets."""

    background: str | None = None
    css: CleanCss = field(default_factory=lambda: CleanCss(""))
    theme: str = ""
    colours: Mapping[str, str] = field(default_factory=dict)


def checked_css(text: str) -> str:
    """Custom CSS as a person saves it: refused past the size limit, else kept as typed
    (it is cleaned when applied, and the page says what was taken out)."""
    if len(text) > MAX_CSS:
        raise TavernaError(
            f"custom CSS is limited to {MAX_CSS} characters",
            field="custom_css",
            code="custom_css_too_long",
            params={"max": str(MAX_CSS)},
        )
    return text


class LooksLibrary:
    """One account's backgrounds, themes and global looks."""

    def __init__(self, store: Store, *, owner: str = "") -> None:
        self.store = store
        self.owner = owner
        self.pictures = PictureStore(store, owner=owner)

    @classmethod
    def of(cls, lib: LibraryService) -> LooksLibrary:
        """The same for the account whose library `lib` is."""
        return cls(lib.store, owner=lib.owner)

    # ------------------------------------------------------------- backgrounds

    def backgrounds(self) -> list[Background]:
        docs = self.store.find_documents(BACKGROUND_KIND, owner=self.owner)
        return [Background(d.id, d.name, str(d.data.get("url") or "")) for d in docs]

    def add_background(self, data: bytes, name: str) -> Background:
        """Store a picture as a background named `name` (the same name again replaces it;
        a path keeps its file name)."""
        name = PurePath(name.replace("\\", "/")).name.strip()[:NAME_MAX] or "background"
        stored = self.pictures.save(data, file=name)
        found = self.store.find_documents(BACKGROUND_KIND, name=name, owner=self.owner)
        doc = self.store.put_document(
            BACKGROUND_KIND,
            name,
            {"url": stored.url, "width": stored.width, "height": stored.height},
            id=found[-1].id if found else None,
            revision=found[-1].revision if found else None,
            owner=self.owner,
        )
        return Background(doc.id, doc.name, stored.url)

    def delete_background(self, background_id: str) -> None:
        doc = self._doc(BACKGROUND_KIND, background_id)
        self.store.delete_document(doc.id, revision=doc.revision)
        if self._settings().get(BACKGROUND, {}).get("url") == doc.data.get("url"):
            set_active(self.store, BACKGROUND, None, self.owner)

    def require_picture(self, url: str) -> None:
        """Refuse a background that is neither a stored picture nor a `data:` one."""
        if url.startswith("data:") and allowed_picture(url):
            return
        self.pictures.require(url)

    # ------------------------------------------------------------------ themes

    def themes(self) -> list[Theme]:
        docs = self.store.find_documents(THEME_KIND, owner=self.owner)
        return [Theme(d.name, d.data) for d in docs]

    def theme(self, name: str) -> Theme | None:
        found = self.store.find_documents(THEME_KIND, name=name, owner=self.owner)
        return Theme(found[-1].name, found[-1].data) if found else None

    def import_theme(self, data: bytes, *, file: str, name: str = "") -> Theme:
        """Store a SillyTavern theme file (one of the same name is replaced)."""
        theme = read_theme(data, file=file, name=name)
        found = self.store.find_documents(THEME_KIND, name=theme.name, owner=self.owner)
        self.store.put_document(
            THEME_KIND,
            theme.name,
            dict(theme.fields),
            id=found[-1].id if found else None,
            revision=found[-1].revision if found else None,
            owner=self.owner,
        )
        return theme

    def apply_theme(self, name: str) -> Looks:
        """Use a theme: its colours, and its custom CSS as the global custom CSS; "": no
        theme (the page's own colours; the custom CSS stays)."""
        if not name:
            power = dict(self._settings().get(POWER_USER) or {})
            power["theme"] = ""
            set_active(self.store, POWER_USER, power, self.owner)
            return self.global_looks()
        theme = self.theme(name)
        if theme is None:
            raise NotFound(f"no theme named {name!r}", code="no_theme_named", params={"name": name})
        power = dict(self._settings().get(POWER_USER) or {})
        power["theme"] = theme.name
        power["custom_css"] = theme.custom_css
        set_active(self.store, POWER_USER, power, self.owner)
        return self.global_looks()

    # ------------------------------------------------------------ global looks

    def _settings(self) -> Mapping[str, Any]:
        docs = self.store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=self.owner)
        return docs[-1].data if docs else {}

    def global_looks(self) -> Looks:
        settings = self._settings()
        power = settings.get(POWER_USER)
        power = power if isinstance(power, Mapping) else {}
        css = power.get("custom_css")
        theme_name = power.get("theme")
        theme = self.theme(theme_name) if isinstance(theme_name, str) and theme_name else None
        return Looks(
            background=background_url(settings.get(BACKGROUND), self.backgrounds()),
            css=clean_css(css if isinstance(css, str) else ""),
            theme=theme.name if theme else "",
            colours=theme.colours if theme else {},
        )

    def set_global(
        self, *, background: str | bool | None = False, custom_css: str | None = None
    ) -> Looks:
        """Change the global background (a picture URL, None for none, False: unchanged)
        and custom CSS (None: unchanged)."""
        if background is not False:
            if background:
                assert isinstance(background, str)
                self.require_picture(background)
                name = next((b.name for b in self.backgrounds() if b.url == background), "")
                set_active(self.store, BACKGROUND, {"name": name, "url": background}, self.owner)
            else:
                set_active(self.store, BACKGROUND, None, self.owner)
        if custom_css is not None:
            power = dict(self._settings().get(POWER_USER) or {})
            power["custom_css"] = checked_css(custom_css)
            set_active(self.store, POWER_USER, power, self.owner)
        return self.global_looks()

    def _doc(self, kind: str, doc_id: str) -> Any:
        for doc in self.store.find_documents(kind, owner=self.owner):
            if doc.id == doc_id:
                return doc
        raise NotFound(f"no {kind} {doc_id!r}", code="no_such_item", params={"document_id": doc_id})


def background_url(value: Any, backgrounds: Sequence[Background] = ()) -> str | None:
    """The picture URL of a stored background choice, when it is one the page may show.
    A path of SillyTavern's (`url("backgrounds/tavern.jpg")`, as a chat locks one) is the
    background of that file name among `backgrounds`, if there is one."""
    url = value.get("url") if isinstance(value, Mapping) else value
    if not isinstance(url, str):
        return None
    url = url.strip()
    if url.lower().startswith("url(") and url.endswith(")"):  # SillyTavern's CSS form
        url = url[4:-1].strip().strip("\"'")
    if allowed_picture(url):
        return url
    name = unquote(url.split("?", 1)[0].rsplit("/", 1)[-1])
    return next((b.url for b in backgrounds if b.name == name), None) if name else None
