#!/bin/sh
# The lane rewrite against scalar C on simd.nupp, in C with no LuaJIT in the
# process: every gang, GCC and Clang, every tier this CPU runs (nupp crosscheck).
# Further options go to nupp crosscheck (e.g. --tier v3 --cases 200 --verbose).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
nupp=${NUPP:-$here/../../.venv/bin/nupp}
[ -x "$nupp" ] || nupp=nupp
exec "$nupp" crosscheck "$here/simd.nupp" --cc gcc,clang --gang 4,8,16 "$@"
