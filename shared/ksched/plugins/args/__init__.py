"""Typed plugin args and their validation in one place (upstream ``pkg/scheduler/apis/config``:
``types_pluginargs.go`` and ``validation/validation_pluginargs.go``).

``types`` holds the args Structs with upstream's defaults; ``validation`` maps each args type to
its validator, written there or in ``<family>_validation`` beside it.
"""
