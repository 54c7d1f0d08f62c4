-- An uncaught error whose object is a table without __tostring.
io.write("partial")
error({ code = 3 })
