"""Price feeds: adapters, fetching, the Redis cache and the bundled snapshot."""
