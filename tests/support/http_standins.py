"""The stand-in HTTP servers of the tests (a Hub, an OpenAI-compatible endpoint, a download mirror, the built docs),
run and stopped one way: :func:`serving`."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

POLL_S = 0.05
"""``serve_forever``'s poll interval: ``shutdown()`` waits for the poll in progress, 0.5 s with the library's
default, in every test that stops a server."""


@contextlib.contextmanager
def serving(handler) -> Iterator[ThreadingHTTPServer]:
    """A ``ThreadingHTTPServer`` on a free port of 127.0.0.1 answering with ``handler`` (a request handler class or
    factory), served from a daemon thread while the block runs; shut down, closed and its thread joined after."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
