"""Offline tooling: read stack files as the Pulumi CLI would, run the program under recording mocks."""
