error("the module refuses to load")
