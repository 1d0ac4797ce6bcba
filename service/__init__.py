"""The flexible table service: an HTTP API and a web page over :mod:`cubeguard.tables` (FastAPI)."""
