"""Tests: unit, golden, differential and property tests."""
