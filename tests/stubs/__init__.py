"""Local stub model servers speaking each provider's wire protocol, for tests and benchmarks."""

from tests.stubs.model_server import Recorded, Reply, StubServer, start_stub

__all__ = ["Recorded", "Reply", "StubServer", "start_stub"]
