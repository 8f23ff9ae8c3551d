"""Small real plugins for the tests, and how a test installs them (an entry-point
distribution written to a folder on `sys.path`)."""
