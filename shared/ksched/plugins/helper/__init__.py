"""What several plugins share and no plugin owns (upstream ``framework/plugins/helper`` and the
``component-helpers`` / ``csi-translation-lib`` the volume plugins call).

``normalize`` (DefaultNormalizeScore), ``shape_score`` (the broken linear function of utilization
shapes), ``nodeindex`` and ``nodeselection`` (node columns and node selectors over snapshot rows),
``storage`` and ``csi_translation`` (PV/PVC/StorageClass rules and in-tree to CSI translation);
``testing`` builds the storage objects their tests use. Nothing here imports a plugin.
"""
