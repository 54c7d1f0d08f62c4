silent_ran = (silent_ran or 0) + 1
