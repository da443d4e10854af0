"""The distill Lambda (handler: lambdas.distill.handler.handler)."""
