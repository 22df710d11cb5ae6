"""A local endpoint that accepts every connection and never answers: what a hung Hub or data mirror looks like to a
client. One helper for the network-timeout tests (``tests/translate/test_network_timeouts.py``) and the hostile campaign's
push case (``tests/support/hostile_campaign.py``)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def silent_server() -> Iterator[str]:
    """``with silent_server() as url:`` — ``http://127.0.0.1:PORT`` of a server that accepts connections (held open
    until the block ends) and never sends a byte; its thread and sockets are closed at the end."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()
