"""The browser tests' harness: a localhost server, the mocked routes and Debian's chromium."""
