"""The MCP faces: a transport-agnostic protocol endpoint (`protocol`), the tools, HTTP and stdio transports.

Kept import-light: `episodic.mcp.protocol` is what the AWS Lambda loads.

May import: the core and below (`core/`, `cards/`, `sessions/`, ...), no feature (each adds its own tools);
its transports (`http_server`, `stdio`) are faces.
"""

SERVER_NAME = (
    "episodic"  # the MCP server's name in client configs; Claude Code names its tools mcp__<name>__*
)
