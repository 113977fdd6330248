"""Alerts on screen: the status bar's alert list, and the dialog that says which alerts go where."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop.alert_services import KINDS, AlertConfig, AlertServices
from desktop.compare_services import CompareServices
from desktop.settings import Settings

HOOK_HINT = "e.g. notify-send Headroom {message}   ({kind} {run} {run_id} {message} {folder})"


class AlertIndicator(QToolButton):
    """"⚠ 3 alerts" in the status bar (hidden until the first): the recent alerts, newest first;
    choosing one selects its run."""

    def __init__(self, service: AlertServices, compare: CompareServices, settings: Settings,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent, autoRaise=True,
                         popupMode=QToolButton.ToolButtonPopupMode.InstantPopup)
        self._service, self._compare, self._settings = service, compare, settings
        self.setMenu(QMenu(self))
        self.menu().aboutToShow.connect(self._fill)
        self.setStyleSheet("color: #c62828;")
        service.sig_alert.connect(self._update)  # a bound method: dropped with the button
        self._update()

    def _update(self, *_alert: object) -> None:
        count = len(self._service.recent)
        self.setText(f"⚠ {count} alert{'s' * (count != 1)}")
        self.setToolTip(self._service.recent[0].line() if count else "")
        self.setVisible(bool(count))

    def _fill(self) -> None:
        menu = self.menu()
        menu.clear()
        for alert in self._service.recent:
            menu.addAction(alert.line(), lambda a=alert: self._compare.select([a.run_id]))
        menu.addSeparator()
        menu.addAction("Clear Alerts", self._clear)
        menu.addAction("Alert Settings…", lambda: AlertsDialog(self._service, self._settings,
                                                               self.window()).exec())

    def _clear(self) -> None:
        self._service.clear_recent()
        self._update()


class AlertsDialog(QDialog):
    """Which alerts each watched folder wants, and the command or webhook that gets them."""

    def __init__(self, service: AlertServices, settings: Settings,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent, windowTitle="Alerts")
        self._service = service
        config = service.config
        self.hook = QLineEdit(config.on_alert, placeholderText=HOOK_HINT)
        self.webhook = QLineEdit(config.webhook, placeholderText="https://hooks.example.com/…")
        self.quiet = QDoubleSpinBox(minimum=0.5, maximum=24 * 60, decimals=1, suffix=" min",
                                    value=config.quiet_minutes)
        self.folders = [str(f) for f in settings.watched_folders]
        self.table = self._table(config)
        form = QFormLayout()
        form.addRow("Run a command", self.hook)
        form.addRow("Post to a webhook", self.webhook)
        form.addRow("A running run is quiet after", self.quiet)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Alerts come from runs in watched folders. "
                                "<code>headroom watch FOLDER</code> reads the same settings."))
        layout.addWidget(self.table)
        layout.addLayout(form)
        layout.addWidget(buttons)
        self.resize(720, 360)

    def _table(self, config: AlertConfig) -> QTableWidget:
        table = QTableWidget(len(self.folders), len(KINDS))
        table.setHorizontalHeaderLabels(list(KINDS))
        table.setVerticalHeaderLabels(self.folders)
        for row, folder in enumerate(self.folders):
            wanted = config.kinds_for(folder)
            for column, (kind, what) in enumerate(KINDS.items()):
                item = QTableWidgetItem()
                item.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled)
                item.setCheckState(Qt.CheckState.Checked if kind in wanted
                                   else Qt.CheckState.Unchecked)
                item.setToolTip(what)
                table.setItem(row, column, item)
        return table

    def config(self) -> AlertConfig:
        """The settings as the dialog shows them."""
        kinds = list(KINDS)
        folders = {}
        for row, folder in enumerate(self.folders):
            wanted = [kinds[c] for c in range(len(kinds))
                      if self.table.item(row, c).checkState() == Qt.CheckState.Checked]
            folders[folder] = wanted
        return AlertConfig(self.hook.text().strip(), self.webhook.text().strip(),
                           self.quiet.value(), folders)

    def accept(self) -> None:
        self._service.set_config(self.config())
        super().accept()
