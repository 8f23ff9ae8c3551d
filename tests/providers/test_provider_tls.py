"""A model API over HTTPS, as every hosted one is: the stream comes through when its
certificate is trusted, and an untrusted one is a network error that names the cause."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from taverna.providers import transport
from taverna.providers.events import ErrorKind, StreamError, TextDelta
from taverna.providers.request import Api
from tests.providers.test_provider_streams import KEY, run
from tests.stubs import Reply, StubServer


def _self_signed(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@pytest.fixture(scope="module")
def tls_stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StubServer, Path]]:
    cert, key = _self_signed(tmp_path_factory.mktemp("tls"))
    server = StubServer(key=KEY).start(tls=(cert, key))
    try:
        yield server, cert
    finally:
        server.stop()


@pytest.fixture
def trusting(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """SSL_CERT_FILE read afresh by the transport, and forgotten afterwards."""
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    transport._certificates.cache_clear()
    yield monkeypatch
    transport._certificates.cache_clear()


@pytest.mark.parametrize("api", [Api.OPENAI, Api.ANTHROPIC])
def test_a_stream_over_https_with_a_trusted_certificate(
    tls_stub: tuple[StubServer, Path], trusting: pytest.MonkeyPatch, api: Api
) -> None:
    stub, cert = tls_stub
    trusting.setenv("SSL_CERT_FILE", str(cert))
    assert stub.url.startswith("https://")
    stub.script(Reply(tokens=["Over ", "TLS."]))
    events = run(stub, api)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Over TLS."


def test_an_untrusted_certificate_is_a_network_error_naming_it(
    tls_stub: tuple[StubServer, Path], trusting: pytest.MonkeyPatch
) -> None:
    stub, _ = tls_stub
    trusting.delenv("SSL_CERT_FILE", raising=False)  # certifi's authorities only
    events = run(stub, Api.OPENAI)
    error = events[-1]
    assert isinstance(error, StreamError) and error.kind is ErrorKind.NETWORK
    assert "certificate" in error.message.lower() and KEY not in error.message
