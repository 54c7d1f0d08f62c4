"""C emission for scalar and lane IR, the helper library and feature tiers (issue: scalar C backend)."""
