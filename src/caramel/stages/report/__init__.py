"""The `report` stage: result rows → tables (csv, pretty, aligned, markdown, json) and databases.

`dataset` builds JUBE's result rows from analysed values, `table` selects, sorts, formats and
renders columns, `database` writes `<database>` results into SQLite as JUBE does, `results`
ties them together for `bench result` and the notebook API; `readable` draws a table for people
(rounded, empty columns left out, folded to a terminal's width).
"""
