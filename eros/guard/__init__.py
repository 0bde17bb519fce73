"""The memory guard: rules, secrets and the meaning layer that keep instructions and secrets
out of memory."""
