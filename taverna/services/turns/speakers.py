"""Who speaks in a group chat: the members a round has answer, the member one reply is
for, and the connection that member is asked through."""

from __future__ import annotations

from taverna.engine.assembly.context import GenerationType
from taverna.errors import NotFound
from taverna.model.chat import Chat, Node, NodeRole, PathTail
from taverna.services.chats.groups import POOL_WINDOW_PER_MEMBER, GroupService, speakers_for
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import Connection, ConnectionService
from taverna.services.turns.paths import PathEnds

# The kinds that keep the author of the reply they redo or extend.
_KEEPS_AUTHOR = (GenerationType.SWIPE, GenerationType.REGENERATE, GenerationType.CONTINUE)


def round_speakers(
    chats: ChatService, paths: PathEnds, chat: Chat, text: str, user_input: bool
) -> tuple[str, ...]:
    """Who answers, in order, when the person sends `text` (or nothing) to `chat`:
    its character, or the members the group's scheduler picks."""
    if not chat.group_id:
        return (chat.characters[0].name,) if chat.characters else ()
    groups = GroupService(chats, owner=chat.owner)
    group = groups.get(chat.group_id)
    members = groups.members(group, chat)
    want = POOL_WINDOW_PER_MEMBER * max(1, len(members)) + 2
    end = (
        paths.tail(chat, chat.active_leaf_id, want)
        if chat.active_leaf_id
        else PathTail((), 0, 0, chat.base_state)
    )
    typed = text if text.strip() else None
    position = end.before + len(end.nodes) + (1 if typed is not None else 0)
    return speakers_for(
        group,
        members,
        chat.id,
        end.nodes,
        position=position,
        user_input=(user_input and typed is not None) or (user_input and not end.nodes),
        text=typed,
    )


def speaker(
    chats: ChatService,
    chat: Chat,
    kind: GenerationType,
    anchor: Node | None,
    member: str | None,
    end: PathTail | None,
    pending: Node | None,
) -> tuple[str, tuple[str, ...]]:
    """Who speaks, and the group's members (none for a chat with one character).

    algo-chat-ops.md §5.1: the member asked for; a swipe, a regenerate or a
    continue keeps the author of the reply; else the first the scheduler picks."""
    first = chat.characters[0].name if chat.characters else ""
    if not chat.group_id:
        return first, ()
    groups = GroupService(chats, owner=chat.owner)
    group = groups.get(chat.group_id)
    found = groups.members(group, chat)
    names = tuple(m.name for m in found)
    if member:
        if member not in names:
            raise NotFound(
                f"no member named {member!r} in the group",
                field="member",
                code="no_member_named_in_group",
                params={"member": str(member)},
            )
        return member, names
    if (
        kind in _KEEPS_AUTHOR
        and anchor is not None
        and anchor.role is NodeRole.ASSISTANT
        and anchor.speaker in names
    ):
        return anchor.speaker, names
    active = [m.name for m in found if not m.muted] or list(names)
    if kind is GenerationType.IMPERSONATE or not active:
        return (active[0] if active else first), names
    path = list(end.nodes) if end is not None else []
    if pending is not None:
        path.append(pending)
    position = (end.before if end is not None else 0) + len(path)
    chosen = speakers_for(
        group, found, chat.id, path, position=position, user_input=pending is not None
    )
    return (chosen[0] if chosen else active[0]), names


def member_connection(
    chats: ChatService, connections: ConnectionService, chat: Chat, name: str, fallback: Connection
) -> Connection:
    """A member's own connection, when the group gives it one (else `fallback`)."""
    groups = GroupService(chats, owner=chat.owner)
    assert chat.group_id is not None
    for found in groups.members(groups.get(chat.group_id), chat):
        if found.name == name and found.connection:
            return connections.of(chat.owner).get(found.connection)
    return fallback
