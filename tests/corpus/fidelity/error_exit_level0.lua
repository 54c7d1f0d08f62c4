-- An uncaught error without a position, with a message over two lines.
print("start")
error("first line\nsecond line", 0)
