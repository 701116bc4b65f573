"""`topicforest mcp`: the workspace's topic memory as MCP tools for any agent (read-only).

A client layer beside the language server (`topicforest.server`): it asks the same
`WorkspaceMemory` verbs, on a memory opened read-only. See docs/mcp.md.
"""
