"""In-tree plugins: one sub-package per plugin, each with its table tests beside it."""
