local name = ...
local n = 0
return {
  name = "helper",
  loaded_as = name,
  double = function(x) return 2 * x end,
  counter = function() n = n + 1 return n end,
}
