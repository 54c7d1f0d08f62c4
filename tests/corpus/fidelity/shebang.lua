#!/usr/bin/env luajit
-- A shebang line is skipped.
print("after the shebang")
