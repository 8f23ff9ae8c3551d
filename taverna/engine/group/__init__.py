"""Group chats: who speaks next (`scheduler`), who a message names (`mentions`), and a
reply cut where it starts speaking for another member (`reply`)."""

from taverna.engine.group.mentions import mentioned
from taverna.engine.group.reply import clean_group_reply, cut_at_other_speaker
from taverna.engine.group.scheduler import (
    ActivationStrategy,
    GroupTurn,
    Member,
    next_speakers,
    round_seed,
)

__all__ = [
    "ActivationStrategy",
    "GroupTurn",
    "Member",
    "clean_group_reply",
    "cut_at_other_speaker",
    "mentioned",
    "next_speakers",
    "round_seed",
]
