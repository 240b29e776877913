"""Model backends behind the :class:`~caldrix.engines.base.Engine` seam."""
