"""Does memory help? The built-in holdout experiment: the hook's decision and log (`holdout`, stdlib only),
outcome measures per session (`measures`), and the report comparing the two arms (`report`)."""
