"""AWS adapters: Bedrock distiller, Titan embedder, S3 Vectors store, Secrets Manager authenticator,
card archive. Each takes its boto3 client as an argument; none imports boto3 (the core runs without it).

May import: the core and below, and a feature's `port` and `models` (an adapter of it); never a local-only
module.
"""
