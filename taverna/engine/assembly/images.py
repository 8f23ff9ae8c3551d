"""What an inline image costs in a Chat Completion budget, counted as SillyTavern counts it.

SillyTavern adds an image's cost to its message's text tokens: 85 at `low` detail (and
at `auto` for a picture within 512×512), else OpenAI's tile rule — scaled to 2048 on
the short side, then to 768 on the short side, 170 per 512-pixel tile plus 85.
A picture whose size is unknown costs the flat 85, as SillyTavern's fallback.
"""

from __future__ import annotations

import math

from taverna.model.prompt import PromptImage

FLAT_IMAGE_TOKENS = 85
TILE_TOKENS = 170


def _js_round(value: float) -> int:
    """JavaScript `Math.round`: halves go up."""
    return math.floor(value + 0.5)


def image_tokens(image: PromptImage) -> int:
    """Tokens the budget charges for `image` at its detail."""
    width, height = image.width, image.height
    if image.detail == "low" or width <= 0 or height <= 0:
        return FLAT_IMAGE_TOKENS
    if image.detail == "auto" and width <= 512 and height <= 512:
        return FLAT_IMAGE_TOKENS
    scale = 2048 / min(width, height)
    scaled_w, scaled_h = _js_round(width * scale), _js_round(height * scale)
    final = 768 / min(scaled_w, scaled_h)
    final_w, final_h = _js_round(scaled_w * final), _js_round(scaled_h * final)
    tiles = math.ceil(final_w / 512) * math.ceil(final_h / 512)
    return tiles * TILE_TOKENS + FLAT_IMAGE_TOKENS
