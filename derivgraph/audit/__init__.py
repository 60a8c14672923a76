"""Audits: find derived tensors that no spec declares, at run time and in source code."""
