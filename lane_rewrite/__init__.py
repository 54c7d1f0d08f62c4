"""The lane rewrite, a pass from scalar IR to lane IR: admitted span loops become
Gangs with masks (`rewrite`), then sized for a target (`gang_size`); `report`
says for each span loop whether it was rewritten and why not."""
