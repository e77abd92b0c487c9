"""Pure helpers that turn the core's answer into the nodes' text: the verdict table and the report lines."""
