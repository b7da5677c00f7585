"""Parameter servers on real ranks (chapter 3): sharded push/pull, BSP/ASP/SSP, hotspots, sparse rows, elasticity.

    from netlab import ps
    r = ps.run_ps(workers=8, servers=2, sharding="hash", mode="ssp", staleness=2, bandwidth="1Gbit/s")
    r.step_s, r.server_bytes, r.staleness, r.accuracy

One concept per file: ``roles`` (who is worker, who is server), ``sharding`` (the shard map),
``messages`` (push and pull messages and their order), ``server`` / ``worker`` (push and pull),
``consistency`` (BSP, ASP, SSP), ``training`` (the rank function), ``experiment`` (run and measure),
``formulas`` (BytePS's closed forms), ``hybrid`` (BytePS's summation service; colocated servers as
its special case), ``baseline`` (the same training by ring all-reduce), ``config`` (one run's
settings), ``sparse`` (embedding rows, Zipf hotspots, replication), ``elastic`` (workers leaving and
joining, saved state).
"""
from .consistency import MODES, histogram, ssp_ready
from .experiment import PSResult, assemble, make_config, run_ps
from .roles import Membership, Roles
from .server import ServerState
from .sharding import ShardMap, djb2, mixed_fraction, mixed_map, shard_map

__all__ = ["run_ps", "make_config", "assemble", "PSResult", "ServerState", "Roles", "Membership", "ShardMap",
           "shard_map", "mixed_map", "mixed_fraction", "djb2", "ssp_ready", "histogram", "MODES"]
