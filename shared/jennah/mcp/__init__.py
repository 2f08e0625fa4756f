"""The MCP server of Jennah Memory (issue 19): the agent's memory tools and the brief
resource on the official `mcp` SDK, over stdio (`jnh mcp`) and streamable HTTP (`jnh serve`
under /mcp, and the `mcp` Cloud Function). A client of the HTTP API like jennah.cli: every
tool calls the API with the caller's credentials, so reach is the API's to enforce."""
