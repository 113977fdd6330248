"""One window per database: a second ``headroom PATH...`` hands its paths to the running one.

The running app listens on a local socket (QLocalServer: a Unix socket on Linux
and macOS, a named pipe on Windows) named after the user and the database, open
to that user only. A new launch first tries to connect; when it can, it sends
its paths as one line of JSON and exits, and the running window comes to the
front and ingests them. A socket left by a crashed app refuses connections, so
the new launch takes its name over.
"""

from __future__ import annotations

import getpass
import hashlib
import json
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

CONNECT_TIMEOUT_MS = 500
WRITE_TIMEOUT_MS = 2000
MAX_MESSAGE = 1 << 20  # a hand-over is a list of paths, never megabytes


def server_name(db_url: str) -> str:
    """The socket name of the app that has ``db_url`` open, for this user."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no login name (some containers)
        user = ""
    digest = hashlib.sha256(f"{user}\0{db_url}".encode()).hexdigest()[:16]
    return f"headroom-{digest}"


def hand_over(name: str, paths: list[str]) -> bool:
    """Send ``paths`` (made absolute) to the app listening on ``name``; False if none is."""
    socket = QLocalSocket()
    socket.connectToServer(name)
    if not socket.waitForConnected(CONNECT_TIMEOUT_MS):
        return False
    message = {"paths": [str(Path(p).resolve()) for p in paths]}
    socket.write(json.dumps(message).encode() + b"\n")
    sent = socket.waitForBytesWritten(WRITE_TIMEOUT_MS) or socket.bytesToWrite() == 0
    socket.disconnectFromServer()
    return sent


class InstanceServer(QObject):
    """Listens for later launches; emits the paths each one hands over."""

    sig_paths = Signal(list)
    """Paths from another launch ([] when it named none): show the window, ingest them."""

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._server = QLocalServer(self)
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self._buffers: dict[QLocalSocket, bytearray] = {}
        if not self._server.listen(name):
            QLocalServer.removeServer(name)  # left by an app that did not close
            self._server.listen(name)
        self._server.newConnection.connect(self._accept)

    @property
    def listening(self) -> bool:
        return self._server.isListening()

    def close(self) -> None:
        self._server.close()

    def _accept(self) -> None:
        # Bound methods, not lambdas: Qt cuts them when this object goes, before its sockets.
        while (socket := self._server.nextPendingConnection()) is not None:
            self._buffers[socket] = bytearray()
            socket.readyRead.connect(self._read)
            socket.disconnected.connect(self._read)  # what came before the other end closed
            socket.disconnected.connect(socket.deleteLater)

    def _read(self) -> None:
        socket = self.sender()
        buffer = self._buffers.get(socket)
        if buffer is None:
            return
        buffer += bytes(socket.readAll())
        closed = socket.state() == QLocalSocket.LocalSocketState.UnconnectedState
        if b"\n" in buffer or len(buffer) > MAX_MESSAGE or closed:
            del self._buffers[socket]
            paths = _paths(bytes(buffer).split(b"\n", 1)[0])
            if paths is not None:
                self.sig_paths.emit(paths)


def _paths(line: bytes) -> list[str] | None:
    """The paths of a hand-over message; None for anything else (ignored)."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    paths = message.get("paths") if isinstance(message, dict) else None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        return None
    return paths
