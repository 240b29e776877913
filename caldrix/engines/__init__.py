"""Model backends behind the :class:`~caldrix.engine_seam.Engine` seam."""
