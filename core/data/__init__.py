"""Offline corpora and molecule sources: nothing here downloads anything."""
