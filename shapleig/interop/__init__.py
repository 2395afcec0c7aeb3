"""Bridges to other libraries: shapiq (approximators, interaction values) and botorch acquisition functions."""
