"""The grad page: derivatives you can see, checked, in both modes, with custom rules and pytrees."""
