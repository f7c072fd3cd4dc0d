"""Sphinx configuration of Tessera's Python API reference.

Built by `make docs` (HTML in build/docs/api) and by the test suite, which
treats every warning as an error. The package is imported from the build
tree (PYTHONPATH=build/python)."""

project = "Tessera"
author = "the Tessera developers"
extensions = ["sphinx.ext.autodoc"]
autodoc_default_options = {"members": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
add_module_names = False
html_theme = "alabaster"
html_static_path = []
exclude_patterns = ["_build"]
