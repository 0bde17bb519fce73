"""What operators watch: Prometheus metrics, structured logs, health probes."""
