"""nupp's version: part of every cache key (targets/toolchain.py)."""

__version__ = "0.1.0"
