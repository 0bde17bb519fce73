"""Dreaming: claim an idle session, classify it (extract, screen, embed) and write its memories
and turns."""
