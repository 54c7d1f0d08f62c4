"""SPIR-V binary module writer (a later issue)."""
