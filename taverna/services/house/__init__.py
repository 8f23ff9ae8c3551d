"""The workspace: opening a data folder, building every service once.

Its public face: what other domains and the shells use from it.
"""

from taverna.services.house.data import default_data_dir, open_data, resolve_data_dir
from taverna.services.house.scratch import ScratchFolder
from taverna.services.house.workspace import (
    Workspace,
    create_account,
    open_workspace,
    release_freed_memory,
    seed_local_model,
    seed_presets,
    seed_samples,
)

__all__ = [
    "ScratchFolder",
    "Workspace",
    "create_account",
    "default_data_dir",
    "open_data",
    "open_workspace",
    "release_freed_memory",
    "resolve_data_dir",
    "seed_local_model",
    "seed_presets",
    "seed_samples",
]
