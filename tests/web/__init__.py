"""A package so that pytest imports this folder's conftest as `web.conftest`: tests/python does
`from conftest import ...`, which a second top-level `conftest` module would shadow when both folders
are collected in one run."""
