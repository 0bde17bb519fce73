"""Privacy: pure logic: no I/O, no database, no network."""
