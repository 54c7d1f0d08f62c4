/* The launcher of @NAME@, a Nupp program built by `nupp build` (nupp @VERSION@,
   runtime/project/launcher.c, stamped at build time).

   It embeds LuaJIT and runs the boot script of the output tree it belongs to
   (@BOOT@ under the tree's root), which installs the runtime library, finds the
   program's modules and native libraries in the tree and runs it.  The root is
   the folder above the one holding this executable (bin/@NAME@), found through
   /proc/self/exe: the tree runs wherever it is copied, from any working
   directory, without Python or an environment variable.

   Exit status: the boot script's (0; 1 for an uncaught error of the program;
   os.exit's own); 2 when the tree cannot be found or booted; 130 at Ctrl-C
   (writing "@NAME@: interrupted"; what C stdio still buffers is lost). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

/* @INTERRUPT@: runtime/interrupt.c, stamped in at build time */

static const char PROGRAM[] = "@NAME@";
static const char BOOT[] = "@BOOT@";

/* C functions that call back into Lua (string.gsub with a function, some 10 KB
   a level) grow the C stack faster than LuaJIT's own limit (its Lua stack)
   fires: string.gsub tail-calling itself through its function takes some
   112 MB, and runtime/lua/coroutines.lua lets each coroutine take that much.
   `nupp run` runs Lua on a 256 MB stack (runtime/deep_stack.py); here Lua runs
   on the main thread, whose stack grows up to the soft RLIMIT_STACK read at
   each fault but only as far as the gap the kernel left below it at exec
   time, sized by the limit then (128 MB at least).  So the launcher raises
   the soft limit (within the hard one) and executes itself again, once, for
   the kernel to lay out the deeper stack, with argv and the environment as
   they were.  The raised limit is the only mark of that: the launcher executes
   itself again only when its raise took, which after the exec it has (no
   marker in the program's environment or arguments, and no loop).  Where the
   exec fails, the program runs on what it has.  Under qemu-user, which
   ignores a guest's setrlimit of the stack (and sizes the guest's stack from
   its own limit at start), the raise does not take and nothing is executed
   again: the stack is what the emulator gave.  Processes the program starts
   inherit the raised limit. */
#define STACK_BYTES ((256L + 8) << 20)  /* Lua's 256 MB, and room for argv, the environment and main's frames */

static void deepen_stack(char **argv)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_STACK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= STACK_BYTES)
        return;  /* deep enough (unlimited: the kernel's legacy layout leaves the stack room to grow) */
    rlim_t wanted = limit.rlim_max == RLIM_INFINITY || limit.rlim_max > STACK_BYTES ? STACK_BYTES : limit.rlim_max;
    if (wanted <= limit.rlim_cur)
        return;  /* at the hard limit already */
    limit.rlim_cur = wanted;
    if (setrlimit(RLIMIT_STACK, &limit) != 0 || getrlimit(RLIMIT_STACK, &limit) != 0 || limit.rlim_cur != wanted)
        return;  /* refused, or ignored (qemu-user): run on what there is */
    execv("/proc/self/exe", argv);  /* returns only if it failed: run on the raised limit, within the old gap */
}

/* The tree's root: this executable's real path without its last two
   components (bin/NAME); "" when the tree is the root folder itself. */
static int tree_root(char root[PATH_MAX], const char *argv0)
{
    ssize_t n = readlink("/proc/self/exe", root, PATH_MAX - 1);
    if (n >= 0)
        root[n] = '\0';
    else if (argv0 == NULL || strchr(argv0, '/') == NULL || realpath(argv0, root) == NULL)
        return -1;  /* no /proc, and no path to follow */
    for (int i = 0; i < 2; i++) {
        char *slash = strrchr(root, '/');
        if (slash == NULL)
            return -1;
        *slash = '\0';
    }
    return 0;
}

/* Called with what boot.lua returned to run (finish, the handler, the main
   chunk, the program's arguments): calls the chunk under the handler, as
   lua.c's docall does from its pmain, then finish(ok, failure); returns its
   exit status. */
static int run_program(lua_State *L)
{
    int failed = lua_pcall(L, lua_gettop(L) - 3, 0, 2);
    lua_pushvalue(L, 1);
    lua_pushboolean(L, !failed);
    if (failed)
        lua_pushvalue(L, 3);  /* what the handler made of the error */
    else
        lua_pushnil(L);
    lua_call(L, 2, 1);
    return 1;
}

int main(int argc, char **argv)
{
    deepen_stack(argv);  /* first: what runs before it may run twice */
    char root[PATH_MAX], boot[PATH_MAX + sizeof BOOT];
    if (tree_root(root, argv[0]) != 0) {
        fprintf(stderr, "%s: cannot find the folder it was installed in (/proc/self/exe: %s)\n",
                PROGRAM, strerror(errno));
        return 2;
    }
    snprintf(boot, sizeof boot, "%s/%s", root, BOOT);
    /* no watcher thread (runtime/interrupt.c: qemu-user): the handler flushes and exits */
    if (nu_interrupt_arm("@NAME@: interrupted\n", 130, 0) != 0)
        signal(SIGINT, SIG_DFL);
    lua_State *L = luaL_newstate();
    if (L == NULL) {
        fprintf(stderr, "%s: cannot create a LuaJIT state: out of memory\n", PROGRAM);
        return 2;
    }
    luaL_openlibs(L);
    luaL_checkstack(L, argc + 2, "too many arguments");
    int status = luaL_loadfile(L, boot);
    if (status == 0) {
        lua_pushstring(L, root);
        for (int i = 0; i < argc; i++)
            lua_pushstring(L, argv[i]);
        status = lua_pcall(L, argc + 1, LUA_MULTRET, 0);
    }
    if (status == 0 && lua_isfunction(L, 1)) {  /* a program to run, not an exit status */
        lua_pushcfunction(L, run_program);
        lua_insert(L, 1);
        status = lua_pcall(L, lua_gettop(L) - 1, 1, 0);
    }
    if (status != 0) {
        const char *why = lua_tostring(L, -1);
        fprintf(stderr, "%s: cannot run the program's tree at %s: %s\n", PROGRAM, root[0] ? root : "/",
                why != NULL ? why : "(error object is not a string)");
        lua_close(L);
        return 2;
    }
    status = (int)lua_tointeger(L, -1);
    lua_close(L);
    return status;
}
