"""Simulated tenants: a market that moves on its own, for `make run` and `burstmarket simulate`.

Every simulated tenant acts through `burstmarket.client` over HTTP, exactly as a real tenant
would; only the transport differs (a socket for `serve --simulate`, the app in-process for
`simulate`). Market time comes from the market itself, so the same behaviour runs in real
time, faster (`serve --speed`) or as fast as the machine allows (`simulate`).
"""

from burstmarket.simulation.world import World

__all__ = ["World"]
