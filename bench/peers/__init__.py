"""The peers a user would pick instead of nupp: Numba and C written by hand (bench only)."""
