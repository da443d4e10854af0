"""The mcp Lambda (handler: lambdas.mcp.handler.handler)."""
