"""The window's panels; each takes the app services and renders what presenters decide."""
