-- String escapes and their printed and %q forms.
local s = "a\tb\\c\"d\'e\
f"
print(s, #s)
print("\65\066\0671", #"\0", ("\0x"):byte(1, 2))
print("\x41\x62\x7a", "\z
      joined", "\u{48}\u{49}\u{20AC}", #"\u{10FFFF}")
print(#"\a\b\f\n\r\t\v", ("\a\b\f\n\r\t\v"):byte(1, -1))
print([[long
string]], [==[with ]] inside]==], #[[
skipped first newline]])
print(string.format("%q", "line\nbreak\0nul\r\"q\"\\"))
print(string.format("%q", "\1\2\31\127\200\255"))
print(("x"):rep(3, ","), ("%s|%5s|%-5s|"):format("a", "b", "c"))
print(string.byte("\255\128"), string.char(228, 189, 160))
print(("tab\tsep"):gsub("\t", "<t>"))
print(pcall(loadstring, "return '\\300'"))
