"""The team tracker's password, kept in the system keyring and never in the settings file.

``keyring`` finds the platform's store (macOS Keychain, Windows Credential
Locker, the Secret Service on Linux desktops). Where there is none (a bare
server, a container) nothing is saved and the app asks for the password each
time it connects.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

SERVICE = "Headroom team tracker"


def available() -> bool:
    """Whether a real keyring backend is there to keep the password."""
    import keyring
    from keyring.backends import fail

    try:
        return not isinstance(keyring.get_keyring(), fail.Keyring)
    except Exception:  # a broken backend configuration is no keyring
        log.warning("keyring backend unusable", exc_info=True)
        return False


def load(account: str) -> str | None:
    """The saved password for ``account`` (user@host:port/database), or None."""
    import keyring
    from keyring.errors import KeyringError

    try:
        return keyring.get_password(SERVICE, account)
    except KeyringError:
        return None


def save(account: str, password: str) -> bool:
    """Keep the password in the keyring; False when there is no keyring to keep it."""
    import keyring
    from keyring.errors import KeyringError

    try:
        keyring.set_password(SERVICE, account, password)
    except KeyringError:
        return False
    return True


def forget(account: str) -> None:
    import keyring
    from keyring.errors import KeyringError, PasswordDeleteError

    try:
        keyring.delete_password(SERVICE, account)
    except (KeyringError, PasswordDeleteError):
        pass  # nothing saved, or no keyring
