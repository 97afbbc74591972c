"""The console's half without Textual: what its views show, computed from events, the store and files.

`live` folds a run's events into the Run view's model; `series` shapes it into chart frames; `replay`
reads a past session back; `pane_text` and `format` turn models into rich text; `choices`,
`inventory`, `describe`, `completion`, `sql_statements`, `history` and `query_export` serve the start
dialog, the Instances and SQL views. The widgets beside this package (labtui.ui) draw these; an
import contract keeps Textual out of here, so each piece is tested without an app.
"""
