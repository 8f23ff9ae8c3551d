"""The product's own sample content: a character card and its lorebook.

Ione Calder and the canal city of Brasswater were written for taverna; `taverna serve`
starts with them so that a fresh install has someone to talk to.
"""

from __future__ import annotations

from importlib import resources

from taverna.model.character import CardFile
from taverna.model.lorebook import Lorebook

SAMPLE_CARD = "Ione Calder.png"
SAMPLE_LOREBOOK = "Brasswater.json"


def sample_bytes(name: str) -> bytes:
    """A shipped sample file's bytes."""
    return resources.files(__name__).joinpath(name).read_bytes()


def sample_card() -> CardFile:
    """The sample character, read from its PNG card."""
    from taverna.formats.png_card import read_png_card

    return read_png_card(sample_bytes(SAMPLE_CARD), file=SAMPLE_CARD)


def sample_lorebook() -> Lorebook:
    """The sample character's lorebook, read from its world file."""
    from taverna.formats.world_info import read_world_info

    return read_world_info(sample_bytes(SAMPLE_LOREBOOK), name="Brasswater", file=SAMPLE_LOREBOOK)
