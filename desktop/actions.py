"""Every menu and toolbar command in one table: id, text, shortcut, menu, and the slot it calls.

Adding a command (a later panel's "Size my next run…") is one row here and one
method on the main window; menus and the toolbar are built from this table.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QStyle

Key = QKeySequence.StandardKey
Icon = QStyle.StandardPixmap

MENUS = ("&File", "&Edit", "&View", "&Tools", "&Help")
# What a standard key means where the platform theme does not say (bare X11, offscreen).
FALLBACKS: dict[QKeySequence.StandardKey, str] = {
    Key.Open: "Ctrl+O", Key.Refresh: "F5", Key.Quit: "Ctrl+Q", Key.Delete: "Del",
    Key.SelectAll: "Ctrl+A", Key.Find: "Ctrl+F", Key.FullScreen: "F11",
}


@dataclass(frozen=True)
class ActionSpec:
    id: str
    text: str
    menu: str
    slot: str  # name of the MainWindow method the action calls
    shortcut: QKeySequence.StandardKey | str | None = None
    tip: str = ""
    toolbar: bool = False
    checkable: bool = False
    separator: bool = False  # a separator before it in its menu
    icon: QStyle.StandardPixmap | None = None  # the style's own icon, for the toolbar

    def shortcuts(self) -> list[QKeySequence]:
        """The platform's keys for a standard shortcut (else the usual ones), or the given key."""
        if isinstance(self.shortcut, QKeySequence.StandardKey):
            keys = QKeySequence.keyBindings(self.shortcut)
            return keys or [QKeySequence(FALLBACKS[self.shortcut])]
        return [QKeySequence(self.shortcut)] if self.shortcut else []


ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("open_files", "&Open Files…", "&File", "open_files", Key.Open,
               "Ingest training logs: trainer_state.json, JSONL, CSV, console logs…", toolbar=True,
               icon=Icon.SP_FileIcon),
    ActionSpec("open_folder", "Open F&older…", "&File", "open_folder", "Ctrl+Shift+O",
               "Ingest every run found in a folder", toolbar=True, icon=Icon.SP_DirOpenIcon),
    ActionSpec("load_samples", "Load &Sample Runs", "&File", "load_samples", None,
               "Ingest the sample runs bundled with Headroom"),
    ActionSpec("reload", "&Reload", "&File", "reload", Key.Refresh,
               "Re-read every run's logs: new points are added, unchanged logs skipped",
               toolbar=True, icon=Icon.SP_BrowserReload),
    ActionSpec("watch_folder", "&Watch Folder…", "&File", "watch_folder", "Ctrl+Shift+W",
               "Follow a folder: runs training there appear and their curves grow live",
               toolbar=True, icon=Icon.SP_FileDialogContentsView),
    ActionSpec("connect_team", "Connect to &Team Tracker…", "&File", "connect_team", None,
               "Work on a shared PostgreSQL database: one history for the whole lab",
               separator=True),
    ActionSpec("use_local", "Use &Local Database", "&File", "use_local_database", None,
               "Go back to the database on this computer"),
    ActionSpec("publish", "&Publish to Team Tracker", "&File", "publish_runs", None,
               "Copy the selected runs (series, shape, checkpoints, findings) to the team tracker"),
    ActionSpec("take_offline", "Take a Copy &Offline", "&File", "take_offline", None,
               "Copy the selected team runs into the local database"),
    ActionSpec("export_plots", "&Export Plots…", "&File", "export_plots", "Ctrl+E",
               "Save the plots as PNG or SVG, or the shown points as CSV", separator=True),
    ActionSpec("quit", "&Quit", "&File", "close", Key.Quit, separator=True),
    ActionSpec("rename", "&Rename Run…", "&Edit", "rename_run", "F2"),
    ActionSpec("tags", "Edit &Tags…", "&Edit", "edit_tags", "Ctrl+T"),
    ActionSpec("notes", "&Notes…", "&Edit", "edit_notes", "Ctrl+Shift+N"),
    ActionSpec("delete", "&Delete Runs…", "&Edit", "delete_runs", Key.Delete,
               "Remove the selected runs from the database (your files are not touched)",
               toolbar=True, icon=Icon.SP_TrashIcon),
    ActionSpec("select_all", "Select &All Runs", "&Edit", "select_all", Key.SelectAll,
               separator=True),
    ActionSpec("find", "&Find Runs…", "&Edit", "find", Key.Find, "Filter the runs table"),
    ActionSpec("full_screen", "&Full Screen", "&View", "toggle_full_screen", Key.FullScreen,
               checkable=True),
    ActionSpec("size_run", "&Size My Next Run…", "&Tools", "size_next_run", None,
               "Which GPUs and setup the next run needs, from your runs' memory peaks",
               toolbar=True, icon=Icon.SP_ComputerIcon),
    ActionSpec("size_like", "Size a Run &Like This…", "&Tools", "size_run_like_this", None,
               "The sizing wizard, filled in with the selected run's model and setup"),
    ActionSpec("projects", "Plan a &Project…", "&Tools", "open_projects", None,
               "A whole project: stages and variants on your cards, pilots, GPU-days and cost",
               toolbar=True, icon=Icon.SP_FileDialogDetailedView),
    ActionSpec("calibration", "&Calibration", "&Tools", "show_calibration", None,
               "How well the memory model, fitted to your runs, predicts them"),
    ActionSpec("rediagnose", "Re-run &Diagnostics", "&Tools", "rediagnose", None,
               "Diagnose the selected runs again (after an upgrade or a shape correction)",
               separator=True),
    ActionSpec("rescan_checkpoints", "Rescan &Checkpoints", "&Tools", "rescan_checkpoints",
               None, "Look at the selected run's checkpoints on disk again"),
    ActionSpec("about", "&About Headroom", "&Help", "about"),
)
