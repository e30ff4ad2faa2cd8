"""The HTML pages over the history: `bench dashboard` (every run of one or more histories) and
`bench report` (chosen runs with their tables). Both are one self-contained file drawn by plotly.js,
inlined once per page (docs/dashboard.md says why plotly).

    collection = sources.load(["history.db", "other-site.db"])   # read-only, checked
    page = render.dashboard(collection)                            # HTML text
"""
