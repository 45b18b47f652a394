"""KTables in the engine: the Change (new, old) that flows between table nodes
(``change``), the table processors (``processors``), value getters that read a table's row
through the stores it derives from (``getters``), and ``suppress()`` (``suppress``)."""
