"""Targets: what turns a backend's artifacts into something that runs here.

`toolchain`: the C compiler, nupp's flags, the compile cache; `tiers`: the
x86-64 feature levels, their default gangs, the dispatcher that picks one at
load time; `backends`: the registry of backends a target can name."""
