"""The scan's reasons that name no value, made once: a scan notes thousands a turn."""

from __future__ import annotations

from taverna.model.lorebook import Reason

ACTIVATED = Reason("activated")
DISABLED = Reason("disabled")
CONSTANT = Reason("constant")
STICKY = Reason("sticky")
ON_COOLDOWN = Reason("on_cooldown")
NO_PRIMARY_KEYS = Reason("no_primary_keys")
NO_PRIMARY_KEY = Reason("no_primary_key")
NO_PRIMARY_KEY_STOPPED = Reason("no_primary_key", {"stopped": 1})
CHARACTER_FILTER = Reason("character_filter")
TAG_FILTER = Reason("tag_filter")
WAITS_RECURSION = Reason("waits_recursion")
EXCLUDE_RECURSION = Reason("exclude_recursion")
ACTIVATE_DECORATOR = Reason("activate_decorator")
DONT_ACTIVATE_DECORATOR = Reason("dont_activate_decorator")
FORCED = Reason("forced")
AFTER_BUDGET = Reason("after_budget")
GROUP_QUIRK = Reason("group_quirk")
