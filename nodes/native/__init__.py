"""Loading the native parts: the core library through ctypes, the decoder module, the checks on their
files, the decoder wheels' manifest and the toolchain from PyPI. install.py mounts this package
without the pack, so nothing here imports outside it."""
