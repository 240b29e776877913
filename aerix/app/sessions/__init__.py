"""The session use cases: writing (``writer``), reading and keeping (``queries``), importing
(``importing``), the projections kept on disk beside each log (``views``), and the Claude Code
transcript followed as a request runs (``transcript``)."""
