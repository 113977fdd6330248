"""The wheel's packages: the code, and the ``resources/`` folder as ``headroom_resources``.

Installed, the data is found through importlib.resources (core/resources.py).
pyproject.toml cannot list found packages together with a folder shipped under
another name; everything else about the build is in pyproject.toml.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["core*", "tracker*", "desktop*"]),
              "headroom_resources"],
    package_dir={"headroom_resources": "resources"},
)
