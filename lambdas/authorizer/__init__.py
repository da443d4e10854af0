"""The authorizer Lambda (handler: lambdas.authorizer.handler.handler)."""
