// Nupp is Lua with annotations: highlight ```nupp blocks as Lua.
hljs.registerAliases(["nupp"], { languageName: "lua" });
