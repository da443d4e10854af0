"""Does memory help? The built-in holdout experiment: the hook's decision and log (`holdout`, stdlib only),
outcome measures per session (`measures`), and the report comparing the two arms (`report`).

May import: the core and below and `mcp/`; another feature only through its `port` and `models`; its `cli`
module is a face.
"""
