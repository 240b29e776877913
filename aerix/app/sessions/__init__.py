"""The session use cases: writing (``writer``), reading and keeping (``queries``), importing
(``importing``), and the projections kept on disk beside each log (``views``)."""
