"""The devices page: devices, placement, sharding, collectives, scaling and many processes."""
