"""The Project view: a project's variants side by side, its stages, pilots and report."""
