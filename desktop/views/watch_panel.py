"""The watched-folders panel: what the app follows live, whether it is there, what it last brought.

Under the runs table. The runs themselves show their live status in the
table; this panel is where folders are added and removed, ingested runs' logs
are followed or not, and the time after which a silent run counts as
"crashed?" is set.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.alert_services import AlertServices
from desktop.live_services import LiveServices
from desktop.presenters import watch_list
from desktop.settings import Settings

# The "… ago" texts are refreshed this often while the panel shows.
TICK_MS = 5_000


def ask_folder(parent: QWidget, start: str) -> str:
    """The folder to watch ("" when cancelled); tests replace this function."""
    return QFileDialog.getExistingDirectory(parent, "Watch a folder for new and growing logs",
                                            start)


class WatchPanel(QWidget):
    def __init__(self, live: LiveServices, alerts: AlertServices, settings: Settings,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.live, self._alerts, self._settings = live, alerts, settings
        self.summary = QLabel(wordWrap=True)
        self.add_button = QPushButton("Add Folder…")
        self.add_button.clicked.connect(self.choose_folder)
        self.remove_button = QPushButton("Stop Watching", enabled=False)
        self.remove_button.clicked.connect(self._remove)
        self.alerts_button = QPushButton("Alerts…", toolTip="Which alerts each folder gives, "
                                         "and a command or webhook to forward them to")
        self.alerts_button.clicked.connect(self._edit_alerts)
        self.close_button = QToolButton(text="✕", autoRaise=True, toolTip="Hide this panel")
        self.close_button.clicked.connect(self.hide)
        self.list = _place_list()
        self.list.itemSelectionChanged.connect(self._on_pick)
        self.follow_check = QCheckBox("Also follow the logs of recent runs outside these folders",
                                      checked=live.follow_run_logs)
        self.follow_check.toggled.connect(live.set_follow_run_logs)
        self.stale_spin = QSpinBox(minimum=1, maximum=24 * 60, suffix=" min",
                                   value=round(settings.stale_minutes))
        self.stale_spin.setToolTip("A running run whose logs bring nothing new for this long "
                                   "is shown as crashed?")
        self.stale_spin.valueChanged.connect(live.set_stale_minutes)
        self._layout()
        self._tick = QTimer(self, interval=TICK_MS)
        self._tick.timeout.connect(self.refresh)
        live.sig_places_changed.connect(self.refresh)
        self.refresh()

    def _layout(self) -> None:
        top = QHBoxLayout()
        top.addWidget(self.summary, 1)
        top.addWidget(self.add_button)
        top.addWidget(self.remove_button)
        top.addWidget(self.alerts_button)
        top.addWidget(self.close_button)
        bottom = QHBoxLayout()
        bottom.addWidget(self.follow_check, 1)
        bottom.addWidget(QLabel("Mark silent runs crashed? after"))
        bottom.addWidget(self.stale_spin)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(top)
        layout.addWidget(self.list)
        layout.addLayout(bottom)

    # ---- Public API

    def choose_folder(self) -> None:
        """Ask for a folder and follow it."""
        folder = ask_folder(self, self._settings.last_folder)
        if folder:
            self._settings.last_folder = folder
            self.show()
            self.live.add_folder(folder)

    def refresh(self) -> None:
        live, now = self.live, time.time()
        chosen = {item.data(0, Qt.ItemDataRole.UserRole) for item in self.list.selectedItems()}
        gone = {p for p in live.places() if live.missing(p)}
        rows = watch_list.rows(live.folders, [p for p in live.places() if p not in live.folders],
                               gone, live.news, now)
        self.list.clear()
        for row in rows:
            item = _item(row)
            self.list.addTopLevelItem(item)
            item.setSelected(row.place in chosen)
        self.summary.setText(watch_list.summary(len(live.folders), len(rows) - len(live.folders),
                                                len(gone), live.last_look, now))

    # ---- Slots

    def _on_pick(self) -> None:
        self.remove_button.setEnabled(any(
            item.data(1, Qt.ItemDataRole.UserRole) for item in self.list.selectedItems()))

    def _remove(self) -> None:
        for item in self.list.selectedItems():
            if item.data(1, Qt.ItemDataRole.UserRole):
                self.live.remove_folder(item.data(0, Qt.ItemDataRole.UserRole))

    def _edit_alerts(self) -> None:
        from desktop.views.alert_views import AlertsDialog

        AlertsDialog(self._alerts, self._settings, self).exec()

    def showEvent(self, event) -> None:
        self._tick.start()
        self.refresh()
        super().showEvent(event)

    def hideEvent(self, event) -> None:
        self._tick.stop()
        super().hideEvent(event)


def _place_list() -> QTreeWidget:
    tree = QTreeWidget(rootIsDecorated=False, uniformRowHeights=True, alternatingRowColors=True)
    tree.setHeaderLabels(["Folder or log", "State", "Last news"])
    tree.setSelectionMode(QTreeWidget.SelectionMode.ExtendedSelection)
    header = tree.header()
    header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
    header.setStretchLastSection(True)
    tree.setColumnWidth(0, 200)
    tree.setColumnWidth(1, 72)
    return tree


def _item(row: watch_list.PlaceRow) -> QTreeWidgetItem:
    item = QTreeWidgetItem([row.shown, row.state, row.news])
    item.setData(0, Qt.ItemDataRole.UserRole, row.place)
    item.setData(1, Qt.ItemDataRole.UserRole, row.removable)
    item.setToolTip(0, row.place)
    item.setToolTip(2, row.news)
    item.setForeground(1, QBrush(QColor(watch_list.STATE_COLOURS.get(row.state, "#000"))))
    return item
