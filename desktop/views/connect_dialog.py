"""Connect to a team tracker: a PostgreSQL server's address and login, tried before it is used.

"Test Connection" tries the login and reads the schema without changing
anything; "Connect" opens the database (creating Headroom's tables in an empty
one). Both run in the pool, so a slow server never freezes the window. The
password goes to the system keyring when the user asks and one exists.
"""

from __future__ import annotations

from PySide6.QtGui import QIntValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop import passwords
from desktop.presenters.team_connection import DEFAULT_PORT, Connection
from desktop.team_services import TeamServices
from desktop.workers import Worker

OK_COLOUR, ERROR_COLOUR, BUSY_COLOUR = "#2e7d32", "#c62828", "#616e7c"
INTRO = ("A team tracker is a PostgreSQL database the whole lab shares: everyone's runs "
         "feed the same history and the same memory calibration.")


class ConnectDialog(QDialog):
    def __init__(self, team: TeamServices, parent: QWidget | None = None,
                 switch: bool = True) -> None:
        super().__init__(parent)
        self.setWindowTitle("Connect to Team Tracker")
        self._team, self._switch = team, switch
        self._worker: Worker | None = None
        known = team.connection or Connection("", DEFAULT_PORT, "headroom", "")
        self.host = QLineEdit(known.host, placeholderText="db.lab.example or /var/run/postgresql")
        self.port = QLineEdit(known.port, validator=QIntValidator(1, 65535), maximumWidth=80)
        self.database = QLineEdit(known.database)
        self.user = QLineEdit(known.user)
        self.password = QLineEdit(echoMode=QLineEdit.EchoMode.Password)
        self.remember = QCheckBox()
        self.message = QLabel(wordWrap=True, minimumHeight=36)
        self.test_button = QPushButton("Test Connection")
        self.test_button.clicked.connect(self.test)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.connect_button = self.buttons.addButton(
            "Connect" if switch else "Connect and Copy", QDialogButtonBox.ButtonRole.AcceptRole)
        self.connect_button.setDefault(True)
        self.buttons.accepted.connect(self.connect_)
        self.buttons.rejected.connect(self.reject)
        self._fill_password(known)
        self._layout()

    def _layout(self) -> None:
        intro = QLabel(INTRO, wordWrap=True)
        intro.setStyleSheet(f"color: {BUSY_COLOUR};")
        form = QFormLayout()
        form.addRow("Host:", self.host)
        form.addRow("Port:", self.port)
        form.addRow("Database:", self.database)
        form.addRow("User:", self.user)
        form.addRow("Password:", self.password)
        form.addRow("", self.remember)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.message)
        row = QHBoxLayout()
        row.addWidget(self.test_button)
        row.addStretch(1)
        row.addWidget(self.buttons)
        layout.addLayout(row)
        self.setMinimumWidth(460)

    def _fill_password(self, known: Connection) -> None:
        if passwords.available():
            saved = self._team.saved_password(known) if known.host else None
            self.password.setText(saved or "")
            self.remember.setText("Remember the password in the system keyring")
            self.remember.setChecked(saved is not None or not known.host)
        else:
            self.remember.setText("No system keyring here: the password is asked at each "
                                  "connection")
            self.remember.setEnabled(False)

    # ---- Public API

    def connection(self) -> Connection:
        return Connection(self.host.text().strip(), self.port.text().strip(),
                          self.database.text().strip(), self.user.text().strip())

    def test(self) -> None:
        """Try the login and read the schema, changing nothing."""
        if self._ready():
            self._busy("Trying the connection…")
            self._worker = self._team.probe(self.connection(), self.password.text(),
                                            self._tested, self._failed)

    def connect_(self) -> None:
        """Open the database (and switch the app to it); the dialog closes when it is open."""
        if self._ready():
            self._busy("Connecting…")
            remember = self.remember.isChecked() if self.remember.isEnabled() else None
            self._worker = self._team.connect(self.connection(), self.password.text(), remember,
                                              self.accept, self._failed, switch=self._switch)

    # ---- Steps

    def _ready(self) -> bool:
        problem = self.connection().problem()
        if problem:
            self._say(problem, ERROR_COLOUR)
        return problem is None

    def _busy(self, text: str) -> None:
        self._say(text, BUSY_COLOUR)
        self.test_button.setEnabled(False)
        self.connect_button.setEnabled(False)

    def _tested(self, text: str) -> None:
        self._done()
        self._say(text, OK_COLOUR)

    def _failed(self, message: str) -> None:
        self._done()
        self._say(f"Could not connect: {message}", ERROR_COLOUR)

    def _done(self) -> None:
        self._worker = None
        self.test_button.setEnabled(True)
        self.connect_button.setEnabled(True)

    def _say(self, text: str, colour: str) -> None:
        self.message.setStyleSheet(f"color: {colour};")
        self.message.setText(text)

    def done(self, result: int) -> None:
        """Closing while a connect is under way drops the connection it makes."""
        if self._worker is not None and result == QDialog.DialogCode.Rejected:
            self._worker.cancel()
        super().done(result)
