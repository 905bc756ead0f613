"""The control plane's restart keeps the API server's port from being taken while it is down."""

from __future__ import annotations

import errno
import socket

import pytest

from ksched.launcher.controlplane import _held_port, _secure_port


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_secure_port_is_read_from_the_command_line() -> None:
    assert _secure_port(["kube-apiserver", "--etcd-servers=x", "--secure-port=49329"]) == 49329
    assert _secure_port(["etcd", "--listen-client-urls=https://127.0.0.1:2379"]) is None


def test_a_held_port_is_taken_by_nothing_but_a_reusing_listener() -> None:
    port = _free_port()
    with _held_port(port):
        # what a connection's local port or another server would do: refused
        with socket.socket() as other, pytest.raises(OSError) as refused:
            other.bind(("127.0.0.1", port))
        assert refused.value.errno == errno.EADDRINUSE
        # the restarted server's listener (SO_REUSEADDR, as Go's net.Listen sets it) binds beside it
        with socket.socket() as server:
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", port))
            server.listen()
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                pass
    with socket.socket() as after:  # released once the server is up
        after.bind(("127.0.0.1", port))
