"""Games and their exact values: coalition matrices, the ``Game`` protocol, enumeration, game identity."""
