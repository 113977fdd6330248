"""Qt item models over tracker data."""
