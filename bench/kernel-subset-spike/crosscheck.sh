#!/bin/sh
# Every committed kernel here, checked in C with no LuaJIT in the process:
# scalar C against lane C at gangs 4 and 8 (and 16 where the tier has it),
# GCC's build against Clang's (nupp crosscheck; README "Using it").
#
#   ./crosscheck.sh           every tier this CPU runs, gangs 4, 8 and 16
#   ./crosscheck.sh v3        one tier (baseline, v2, v3: gangs 4 and 8; v4: also 16)
#
# Exit status: 0 all agree, 1 a mismatch (reported with the command that
# reproduces it), 2 bad usage or a missing compiler.  NUPP names the nupp to
# run (default: the checkout's .venv/bin/nupp, else nupp on PATH).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
nupp=${NUPP:-$here/../../.venv/bin/nupp}
[ -x "$nupp" ] || nupp=nupp
kernels=$(ls "$here"/*.nupp | grep -v '_main\.nupp$')
case "${1:-}" in
    "") exec "$nupp" crosscheck $kernels --cc gcc,clang --gang 4,8,16 ;;
    v4) exec "$nupp" crosscheck $kernels --cc gcc,clang --tier v4 --gang 4,8,16 ;;
    *)  exec "$nupp" crosscheck $kernels --cc gcc,clang --tier "$1" --gang 4,8 ;;
esac
