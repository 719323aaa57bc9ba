"""Packages are found, never listed (a package missing from a hand-written list once broke every
installed command); the top-level playbooks/ folder ships as remotedbg.playbooks."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["remotedbg", "remotedbg.*"]) + ["remotedbg.playbooks"],
    package_dir={"remotedbg.playbooks": "playbooks"},
)
