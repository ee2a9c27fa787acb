"""Session-scoped real-dsh peer (installed once per machine; see peer.py). Never skips: if the peer
cannot be installed the interop tests fail with the reason."""

from __future__ import annotations

import pytest

from tests.interop.peer import Peer, PeerUnavailable, install


@pytest.fixture(scope="session")
def dsh_peer() -> Peer:
    try:
        return Peer(install())
    except PeerUnavailable as err:
        pytest.fail(f"dsh interop peer unavailable: {err}", pytrace=False)
