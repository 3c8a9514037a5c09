"""The HTTP API: litestar app factory, routes per audience (tenant, operator), auth, errors."""
