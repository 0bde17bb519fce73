"""The pure core: plain data in, plain data out; no database, broker or HTTP."""
