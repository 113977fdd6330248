"""Data shipped with Headroom, no code: installed as the package ``headroom_resources``.

``core.resources.resources_dir()`` finds this folder; see the README beside each kind.
"""
