"""The BENCH.md programs and the benchmarks that measure nupp."""
