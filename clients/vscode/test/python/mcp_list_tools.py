"""Starts the MCP server definition the extension offers VS Code (JSON on stdin: command, args,
env, cwd) as a real process and prints the names of the tools it lists, one a line, through the
official MCP SDK client (test/unit/mcpServer.test.ts)."""

import asyncio
import json
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def main() -> None:
    definition = json.load(sys.stdin)
    server = StdioServerParameters(
        command=definition["command"],
        args=definition["args"],
        env={key: str(value) for key, value in definition["env"].items()},
        cwd=definition["cwd"],
    )
    async with Client(server, read_timeout_seconds=300) as client:
        listed = await client.list_tools()
    print("\n".join(tool.name for tool in listed.tools))


asyncio.run(main())
