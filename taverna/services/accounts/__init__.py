"""Accounts: accounts, their import, ownership.

Its public face: what other domains and the shells use from it.
"""

from taverna.services.accounts.account_import import (
    UserFolderImport,
    check_mapping,
    import_user_folders,
    parse_mapping,
    user_folders,
)
from taverna.services.accounts.ownership import DOCUMENT_PARAMS, Ownership
from taverna.services.accounts.service import (
    MAX_NAME,
    AccountService,
    AccountStatus,
    AddressLockout,
    Session,
)

__all__ = [
    "DOCUMENT_PARAMS",
    "MAX_NAME",
    "AccountService",
    "AccountStatus",
    "AddressLockout",
    "Ownership",
    "Session",
    "UserFolderImport",
    "check_mapping",
    "import_user_folders",
    "parse_mapping",
    "user_folders",
]
