"""`/member-add`, `/member-remove`, `/member-up`, ...: a script changing its group's members.

A member is named as SillyTavern's scripts name one: by its place in the group (from 0),
its character's name, or its card's file name with or without the extension.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING

from taverna.engine.script import ScriptError
from taverna.model.chat import Chat
from taverna.services.chats.service import ChatService
from taverna.services.library.service import LibraryKind, LibraryService

if TYPE_CHECKING:
    from taverna.services.chats.groups import GroupMember, GroupService


def change_member(
    chats: ChatService, library: LibraryService, chat: Chat, action: str, member: str
) -> None:
    """Apply `/member-<action> member` to the group of `chat`, a group chat."""
    from taverna.services.chats.groups import GroupService

    groups = GroupService(chats, owner=library.owner)
    group_id = chat.group_id
    assert group_id is not None
    group = groups.get(group_id)
    files = list(group.members)
    if action == "add":
        files.append(_new_member(library, files, member))
        groups.update(group_id, {"members": files})
        return
    file = _member(groups.members(group, chat), member).file
    if action in ("disable", "enable"):
        groups.set_muted(group_id, file, action == "disable")
    elif action == "remove":
        if len(files) == 1:
            raise ScriptError("a group keeps at least one member", code="group_keeps_at_least_one")
        groups.update(group_id, {"members": [f for f in files if f != file]})
    elif action in ("up", "down"):
        _move(groups, group_id, files, file, -1 if action == "up" else 1)
    else:
        raise ScriptError(
            f"unknown member action {action!r}",
            code="unknown_member_action",
            params={"action": str(action)},
        )


def _new_member(library: LibraryService, files: list[str], member: str) -> str:
    """The card file of the library's character `member`, not yet in the group."""
    doc = library.find(LibraryKind.CHARACTER, member)
    if doc is None:
        raise ScriptError(
            f"no character named {member!r} in the library",
            code="no_character_named_in_library",
            params={"member": str(member)},
        )
    file = f"{doc.name}.png"
    if file in files:
        raise ScriptError(
            f"{member} is already in the group",
            code="is_already_in_group",
            params={"member": str(member)},
        )
    return file


def _member(members: list[GroupMember], member: str) -> GroupMember:
    """The member a script names by place, name or file."""
    index = int(member) if member.isdigit() else None
    found = [
        m
        for i, m in enumerate(members)
        if i == index or member in (m.name, m.file, PurePath(m.file).stem)
    ]
    if not found:
        raise ScriptError(
            f"no member {member!r} in the group",
            code="no_member_in_group",
            params={"member": str(member)},
        )
    return found[0]


def _move(groups: GroupService, group_id: str, files: list[str], file: str, step: int) -> None:
    """Swap `file` with its neighbour one `step` away; at either end nothing moves."""
    at = files.index(file)
    to = at + step
    if 0 <= to < len(files):
        files[at], files[to] = files[to], files[at]
        groups.update(group_id, {"members": files})
