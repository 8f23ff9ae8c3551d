"""A SillyTavern install with several users into the accounts of a server run with them.

SillyTavern keeps each user's things in a folder of their own, `data/<user-handle>/`
(`default-user` for the first). Each such folder goes whole (cards, chats with their
branches, lorebooks, presets, personas, settings) into the account of the same name, or
the account a mapping names for its handle. A folder with no matching account is skipped
and said so: accounts are made by an admin, with a password, never by an import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from taverna.errors import NotFound, TavernaError
from taverna.services.interchange.library_import import (
    LibraryImport,
    ProgressCallback,
    is_user_data_folder,
)
from taverna.services.interchange.report import ImportReport
from taverna.services.library.service import LibraryService
from taverna.store.repository import Store


@dataclass(frozen=True, slots=True)
class UserFolderImport:
    """What became of one user's folder: the account it went into and the import's
    report, or why it was skipped."""

    handle: str
    folder: Path
    account: str | None = None
    report: ImportReport | None = None
    skipped: str = ""
    # why it was skipped by a code and its params, for a page to say in its language
    code: str = ""
    params: Mapping[str, str] = field(default_factory=dict)


def user_folders(root: Path) -> list[tuple[str, Path]]:
    """The user folders of a SillyTavern install, by handle: `root` is the install's
    folder (holding `data/`), its `data/` folder, or one user's folder."""
    if is_user_data_folder(root):
        return [(root.name, root)]
    base = root / "data" if (root / "data").is_dir() else root
    if not base.is_dir():
        raise NotFound("no such folder", file=str(root), code="no_such_folder")
    found = [
        (child.name, child)
        for child in sorted(base.iterdir())
        if not child.name.startswith(("_", ".")) and is_user_data_folder(child)
    ]
    if not found:
        raise NotFound(
            "no SillyTavern user folders here (data/<user>/ with characters/, chats/ or worlds/)",
            file=str(root),
            code="no_sillytavern_user_folders_here",
        )
    return found


def parse_mapping(pairs: list[str]) -> dict[str, str]:
    """`HANDLE=ACCOUNT` pairs as a mapping; FormatError-like refusal for a malformed one."""
    mapping: dict[str, str] = {}
    for pair in pairs:
        handle, sep, account = pair.partition("=")
        if not sep or not handle.strip() or not account.strip():
            raise TavernaError(
                f"expected HANDLE=ACCOUNT, got {pair!r}",
                field="--as",
                code="expected_handle_account_got",
                params={"pair": str(pair)},
            )
        mapping[handle.strip()] = account.strip()
    return mapping


def check_mapping(
    root: Path, folders: list[tuple[str, Path]], mapping: Mapping[str, str], field: str = "--as"
) -> None:
    """NotFound if `mapping` names a handle that is none of `folders`' (`field`: where the
    mapping was given)."""
    unknown = sorted(set(mapping) - {handle for handle, _ in folders})
    if unknown:
        raise NotFound(
            f"no user folder {', '.join(unknown)} (found: "
            f"{', '.join(handle for handle, _ in folders)})",
            file=str(root),
            field=field,
            code="no_user_folder_found",
            params={
                "unknown": str(", ".join(unknown)),
                "names": str(", ".join((handle for handle, _ in folders))),
            },
        )


def import_user_folders(
    store: Store,
    root: Path,
    *,
    accounts: Mapping[str, str] | None = None,
    progress: ProgressCallback | None = None,
    starting: Callable[[int, int, str], None] | None = None,
) -> list[UserFolderImport]:
    """Import each user folder under `root` into its account (`accounts`: handle ->
    account name, for the handles whose account is named otherwise); `starting(index,
    count, handle)` is told before each folder."""
    mapping = dict(accounts or {})
    folders = user_folders(root)
    check_mapping(root, folders, mapping)
    done = []
    for index, (handle, folder) in enumerate(folders):
        if starting is not None:
            starting(index, len(folders), handle)
        name = mapping.get(handle, handle)
        try:
            account = store.account(name=name)
        except NotFound:
            reason = (
                f"no account named {name!r}: add it (`taverna user add {name}`) and import again"
            )
            done.append(
                UserFolderImport(
                    handle,
                    folder,
                    skipped=reason,
                    code="no_account_for_user_folder",
                    params={"name": name, "handle": handle},
                )
            )
            continue
        library = LibraryService(store, owner=account.id)
        report = LibraryImport(library).import_user_data(folder, progress=progress)
        done.append(UserFolderImport(handle, folder, account.name, report))
    return done
