-- os.exit ends the program with its status; buffered output is still written.
io.write("written ")
print("before exit")
os.exit(3)
print("never")
