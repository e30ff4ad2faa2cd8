"""What runs inside a job: imports only payloads, the base and the wrapping helpers."""
