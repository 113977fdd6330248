"""The runs panel's filter box as a query editor: completion, errors at their column, saved filters.

Words still filter as before; a query (``method == "lora" and peak_gib >
40``) is compiled (desktop/presenters/query_text.py) and each run held by the table is
checked against it, with the same meaning ``headroom runs --where`` has. A
mistake turns the box red and says where, in the line under it. Field names
complete as they are typed; the box's saved-filters button keeps queries by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QPoint, QStringListModel, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QCompleter, QInputDialog, QLabel, QLineEdit, QMenu, QStyle

from core.query import QueryError
from desktop.presenters import query_text
from desktop.services import AppServices
from desktop.settings import Settings

if TYPE_CHECKING:
    from desktop.presenters.query_text import Query

MIN_PREFIX = 2
MIN_EDIT_WIDTH = 36


class QueryBox(QObject):
    """Turns ``edit`` into a query editor; :meth:`query` is what the table filters by."""

    def __init__(self, edit: QLineEdit, services: AppServices, settings: Settings | None,
                 refilter: Callable[[], None]) -> None:
        super().__init__(edit)
        self.edit, self._services, self._settings = edit, services, settings
        self._refilter = refilter
        self._metrics: list[str] = []
        self.extras: dict[int, dict] = {}  # config and summary, loaded when a query needs them
        self.error_label = QLabel(wordWrap=True)
        self.error_label.setStyleSheet("color: #c62828;")
        self.error_label.hide()
        self.names = QStringListModel(query_text.field_names(), self)
        self.completer = QCompleter(self.names, self)
        self.completer.setWidget(edit)
        self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.completer.activated.connect(self._insert)
        edit.textEdited.connect(self._offer)
        edit.setToolTip("Words, or a query: method == \"lora\" and peak_gib > 40 and "
                        "model ~ \"llama\" (fields complete as you type)")
        self.saved_menu = QMenu(edit)
        self.saved_menu.aboutToShow.connect(self._fill_saved)
        self.saved_action = QAction(edit.style().standardIcon(
            QStyle.StandardPixmap.SP_FileDialogDetailedView), "Saved filters", edit)
        self.saved_action.setToolTip("Saved filters: apply one, or save this one")
        self.saved_action.triggered.connect(self._show_saved)
        self.saved_action.setEnabled(settings is not None)
        edit.addAction(self.saved_action, QLineEdit.ActionPosition.TrailingPosition)
        edit.setMinimumWidth(MIN_EDIT_WIDTH)  # the button must not widen the panel

    def set_metrics(self, metrics: Iterable[str]) -> None:
        """The metric names of the runs shown (their summaries become completions)."""
        metrics = sorted(set(metrics))
        if metrics != self._metrics:
            self._metrics = metrics
            self.names.setStringList(query_text.field_names(metrics))

    def query(self) -> Query | None:
        """The compiled query in the box (None for words, or for a query with a mistake)."""
        text = self.edit.text()
        compiled, error = None, ""
        if query_text.is_query(text):
            try:
                compiled = query_text.parse(text, self._metrics)
            except QueryError as err:
                error = f"{err}  ·  {text[:err.column - 1]}▸{text[err.column - 1:]}"
        self._show_error(error)
        if compiled is not None and compiled.needs_extras and not self.extras:
            self._load_extras()
        return compiled

    def words(self) -> str:
        """The words to look for ("" while the box holds a query)."""
        text = self.edit.text()
        return "" if query_text.is_query(text) else text

    # ---- Errors

    def _show_error(self, message: str) -> None:
        self.error_label.setText(message)
        self.error_label.setVisible(bool(message))
        self.edit.setStyleSheet("QLineEdit { border: 1px solid #c62828; }" if message else "")

    def _load_extras(self) -> None:
        self._services.load_extras(self._on_extras)

    def _on_extras(self, found: dict[int, dict]) -> None:
        self.extras = found
        self._refilter()

    # ---- Completion

    def _offer(self, text: str) -> None:
        _start, word = query_text.word_at(text, self.edit.cursorPosition())
        if len(word) < MIN_PREFIX:
            self.completer.popup().hide()
            return
        self.completer.setCompletionPrefix(word)
        if self.completer.completionCount() and self.completer.currentCompletion() != word:
            self.completer.complete()
        else:
            self.completer.popup().hide()

    def _insert(self, completion: str) -> None:
        self.completer.popup().hide()
        text, cursor = query_text.complete(self.edit.text(), self.edit.cursorPosition(),
                                           completion)
        self.edit.setText(text)
        self.edit.setCursorPosition(cursor)

    # ---- Saved filters

    def _show_saved(self) -> None:
        self.saved_menu.popup(self.edit.mapToGlobal(self.edit.rect().bottomRight())
                              - QPoint(self.saved_menu.sizeHint().width(), 0))

    def _fill_saved(self) -> None:
        menu = self.saved_menu
        menu.clear()
        saved = self._settings.saved_filters if self._settings else {}
        for name, text in sorted(saved.items()):
            action = menu.addAction(name, lambda t=text: self.edit.setText(t))
            action.setToolTip(text)
        if not saved:
            menu.addAction("No saved filters yet").setEnabled(False)
        menu.addSeparator()
        save = menu.addAction("Save This Filter…", self._save)
        save.setEnabled(bool(self.edit.text().strip()))
        if saved:
            forget = menu.addMenu("Forget")
            for name in sorted(saved):
                forget.addAction(name, lambda n=name: self._settings.save_filter(n, None))

    def _save(self) -> None:
        name, ok = QInputDialog.getText(self.edit, "Save filter", "Name of this filter:",
                                        text=self.edit.text()[:40])
        if ok and name.strip() and self._settings is not None:
            self._settings.save_filter(name.strip(), self.edit.text())
