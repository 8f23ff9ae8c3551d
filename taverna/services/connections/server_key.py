"""The server's own key, which encrypts the API keys at rest (Fernet: AES with an HMAC).

It lives in the data folder as `server.key`, made owner-only (0600) the first time a key
is stored; a copy of `secrets.json` without it reveals no API key.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from taverna.errors import FormatError

KEY_FILE = "server.key"
PREFIX = "fernet:"


def server_key(folder: Path) -> Fernet:
    """The folder's server key, made now if there is none."""
    path = Path(folder) / KEY_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process made it just now
        else:
            with os.fdopen(fd, "wb") as handle:
                handle.write(Fernet.generate_key())
                handle.flush()
                os.fsync(handle.fileno())
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o600)
    try:
        return Fernet(path.read_bytes().strip())
    except ValueError:
        raise FormatError(
            "not a server key (32 url-safe base64 bytes)",
            file=str(path),
            code="not_server_key_32_url",
        ) from None


def seal(fernet: Fernet, value: str) -> str:
    return PREFIX + fernet.encrypt(value.encode()).decode("ascii")


def unseal(fernet: Fernet, stored: str, *, file: str) -> str:
    """A stored value in the clear (a value stored before encryption is read as it is)."""
    if not stored.startswith(PREFIX):
        return stored
    try:
        return fernet.decrypt(stored[len(PREFIX) :].encode("ascii")).decode()
    except (InvalidToken, ValueError):
        raise FormatError(
            f"a stored key cannot be decrypted with {KEY_FILE} (was the file replaced?)",
            file=file,
            code="stored_key_cannot_be_decrypted",
            params={"key_file": str(KEY_FILE)},
        ) from None
