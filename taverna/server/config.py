"""The server's own settings: `server.toml` in the data folder, or a file `--config` names.

```toml
allowed_hosts = ["taverna.home.arpa"]  # Host names answered besides the loopback ones
key_env = ["OPENROUTER_API_KEY"]       # variables a connection made through the page may read
outbound_allow = ["127.0.0.1:5001"]    # internal addresses accounts' model URLs may reach
trusted_proxies = ["127.0.0.1"]        # proxies whose X-Forwarded-For / X-Real-IP name the client

[limits]                               # MiB; a larger request is refused (HTTP 413)
body_mib = 16                          # any request body (JSON and everything else)
upload_mib = 32                        # one uploaded file: a card, a picture, a lorebook, a preset
folder_upload_mib = 1024               # a SillyTavern data folder upload, every file together
folder_files = 100000                  # files in one folder upload
regex_turn_seconds = 1                 # seconds all user regexes of one turn spend together
```
"""

from __future__ import annotations

import ipaddress
import tomllib
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from taverna.errors import FormatError
from taverna.services.connections.outbound_rules import Allowed
from taverna.services.turns.context import TURN_REGEX_BUDGET

CONFIG_FILE = "server.toml"
MIB = 1024 * 1024

# The names of this machine that only this machine's own programs reach it by.
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def is_loopback(host: str) -> bool:
    """Whether a listening address can be reached only from this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_names(bind: str, allowed: Iterable[str]) -> frozenset[str]:
    """The host names a server listening on `bind` answers to: the loopback ones, the
    address it listens on (unless it is every address) and those the operator allowed."""
    names = set(LOOPBACK) | {name.strip().lower().strip("[]") for name in allowed if name.strip()}
    if bind not in WILDCARDS:
        names.add(bind.lower().strip("[]"))
    return frozenset(names)


ProxyNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def proxy_network(value: str) -> ProxyNetwork:
    """A trusted proxy's address ("127.0.0.1", "::1") or network ("10.0.0.0/8");
    ValueError naming it when it is neither."""
    try:
        return ipaddress.ip_network(value.strip().strip("[]"), strict=False)
    except ValueError:
        raise ValueError(
            f"{value!r} is not an IP address or network (such as 127.0.0.1 or 10.0.0.0/8)"
        ) from None


class Limits(BaseModel):
    """How much of a request the server reads before it answers 413."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    body_mib: float = Field(default=16, gt=0)
    upload_mib: float = Field(default=32, gt=0)
    folder_upload_mib: float = Field(default=1024, gt=0)
    folder_files: int = Field(default=100_000, gt=0)
    # The time all user regexes of one turn (lorebook regex keys, regex scripts) may
    # spend together; the rest are skipped and listed in the prompt's ledger.
    regex_turn_seconds: float = Field(default=TURN_REGEX_BUDGET, gt=0)

    @property
    def body(self) -> int:
        return int(self.body_mib * MIB)

    @property
    def upload(self) -> int:
        return int(self.upload_mib * MIB)

    @property
    def folder_upload(self) -> int:
        return int(self.folder_upload_mib * MIB)


class ServerConfig(BaseModel):
    """What the operator of a server decides: who it answers to, what it reads, how much."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allowed_hosts: tuple[str, ...] = ()
    key_env: tuple[str, ...] = ()
    # Addresses or networks of the reverse proxies in front of the server: only a request
    # from one of them has its forwarded headers (X-Forwarded-For, X-Real-IP) read for the
    # client's address, the right-most one that is not a trusted proxy; the login limits
    # count per that address (none: the peer's own address is the client's, whatever the
    # headers say). `taverna serve --trust-proxy ADDR` adds one.
    trusted_proxies: tuple[str, ...] = ()
    limits: Limits = Limits()
    # With accounts, the model and embeddings URLs of people who are not admins reach
    # public addresses only, and these: addresses or networks, each with a port or not
    # ("127.0.0.1:5001", "10.0.0.0/8", "[::1]:8080"). Checked on the address connected
    # to, after DNS. Off without accounts and for admins; the server's own local model and
    # the operator's embeddings endpoint are always reached.
    outbound_allow: tuple[str, ...] = ()

    @field_validator("outbound_allow")
    @classmethod
    def _outbound_entries(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            Allowed.parse(value)
        return values

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_networks(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(str(proxy_network(value)) for value in values)


def load_config(path: Path | None, data_dir: Path) -> ServerConfig:
    """The config in `path`, else the data folder's `server.toml`, else the defaults.

    A file named by `path` must exist; a bad file is a FormatError naming it and the field.
    """
    chosen = path if path is not None else data_dir / CONFIG_FILE
    if path is None and not chosen.exists():
        return ServerConfig()
    try:
        raw = tomllib.loads(chosen.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FormatError(
            "no such config file", file=str(chosen), code="no_such_config_file"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FormatError(
            f"cannot read the config: {exc}",
            file=str(chosen),
            code="cannot_read_config",
            params={"exc": str(exc)},
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise FormatError(
            f"not valid TOML: {exc}",
            file=str(chosen),
            code="not_valid_toml",
            params={"exc": str(exc)},
        ) from None
    try:
        return ServerConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise FormatError(
            first["msg"],
            file=str(chosen),
            field=field,
            code="config_value_invalid",
            params={"why": first["msg"]},
        ) from None
