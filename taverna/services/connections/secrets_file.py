"""The data folder's file of API keys, each sealed with the server key.

A connection's key is never in its document: the document names an entry of this file
(`secret:<id>`), which only its owner can read or write (mode 0600).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from taverna.errors import FormatError, NotFound, library_cause
from taverna.model.chat import new_id
from taverna.services.connections.server_key import seal, server_key, unseal

SECRETS_FILE = "secrets.json"


class Secrets:
    """API keys in one owner-only JSON file of the data folder: reference -> key, each
    encrypted with the server key (`server_key.py`)."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / SECRETS_FILE
        self.folder = Path(folder)

    def _read(self) -> dict[str, str]:
        if not self.path.exists():
            return {}
        if self.path.stat().st_mode & 0o077:
            # someone loosened the file's permissions: take them back before reading
            os.chmod(self.path, 0o600)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise FormatError(
                f"not valid JSON: {exc.msg}",
                file=str(self.path),
                code="not_valid_json",
                params={"msg": str(exc.msg), **library_cause(exc)},
            ) from None
        if not isinstance(data, dict):
            raise FormatError(
                "expected a JSON object", file=str(self.path), code="expected_json_object"
            )
        fernet = server_key(self.folder)
        return {str(k): unseal(fernet, str(v), file=str(self.path)) for k, v in data.items()}

    def _write(self, data: Mapping[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(f".{SECRETS_FILE}.{os.getpid()}.tmp")
        # created 0600 from the start, so the key is never readable by others, not even briefly
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            fernet = server_key(self.folder)
            sealed = {ref: seal(fernet, key) for ref, key in data.items()}
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(sealed, handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.path)
        finally:
            if temp.exists():
                temp.unlink()
        os.chmod(self.path, 0o600)

    def put(self, key: str, ref: str | None = None) -> str:
        """Store a key; returns its reference (`secret:<id>`)."""
        ref = ref or f"secret:{new_id()}"
        data = self._read()
        data[ref] = key
        self._write(data)
        return ref

    def get(self, ref: str) -> str:
        data = self._read()
        if ref not in data:
            raise NotFound(
                "the stored key is missing from the secrets file",
                file=str(self.path),
                code="stored_key_is_missing_from",
            )
        return data[ref]

    def delete(self, ref: str) -> None:
        data = self._read()
        if data.pop(ref, None) is not None:
            self._write(data)
