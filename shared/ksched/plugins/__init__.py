"""In-tree plugins: one module or sub-package per plugin, each with its table tests beside it.

``args`` holds the plugins' typed args and their validation, ``helper`` what several plugins share,
``registry`` the mapping from plugin name to registration. Nothing else lives at this level.
"""
