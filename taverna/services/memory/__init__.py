"""Memory: recall (vectors, backlog, search) and summaries as state.

Its public face: what other domains and the shells use from it.
"""

from taverna.services.memory.recall import (
    EmbeddingBacklog,
    EmbeddingPlan,
    RecallService,
    TurnRecall,
    accounts_plan,
    recall_config,
)
from taverna.services.memory.recall_keys import RecallKeys
from taverna.services.memory.recall_settings import RecallSettingsService
from taverna.services.memory.summaries import (
    SummaryInfo,
    SummaryService,
    carries_summary,
    covered_ids,
    describe,
    hidden_count,
    in_force,
)

__all__ = [
    "EmbeddingBacklog",
    "EmbeddingPlan",
    "RecallKeys",
    "RecallService",
    "RecallSettingsService",
    "SummaryInfo",
    "SummaryService",
    "TurnRecall",
    "accounts_plan",
    "carries_summary",
    "covered_ids",
    "describe",
    "hidden_count",
    "in_force",
    "recall_config",
]
