"""Projects and builds: `nupp.toml`, `nupp run PROJECT_DIR` and `nupp build`.

    project = load_project(Path("demo"))                 # config.py: nupp.toml, checked
    build_project(project, BuildOptions(...), say)       # build.py: the output tree

A build writes a relocatable output tree (tree.py): the stamped launcher
`bin/NAME` (launcher.py, launcher.c: C embedding LuaJIT), the boot script
that does without Python what runtime/host.py does for `nupp run`
(boot.lua), the runtime library, the Lua of every module the program
reaches through `require` (requires.py) and the native libraries of their
`@aot` functions.
"""
