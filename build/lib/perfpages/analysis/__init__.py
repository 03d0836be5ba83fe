"""What the numbers mean: metrics (unit, better direction, format), cells and changes and the
decision rule (method), the saturation knee, `bench report` and `bench cite`. Pure: no MkDocs,
no PostgreSQL.
"""
