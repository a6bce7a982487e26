// An MCP client nobody at MIO wrote: the official TypeScript SDK's.
// Connects to MIO's MCP server — `mio mcp` on stdio (argv: stdio
// <mio binary>) or Streamable HTTP (argv: http <url of /mcp>) — lists the
// tools, pulls one message of consumer $MIO_CONSUMER and answers it with
// reply, twice (the second must return the same outbound id). Prints a
// JSON summary on stdout.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target] = process.argv.slice(2);
const token = process.env.MIO_API_TOKEN;
const consumer = process.env.MIO_CONSUMER;

const transport =
  mode === "stdio"
    ? new StdioClientTransport({ command: target, args: ["mcp"], env: { ...process.env }, stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(target), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      });
const client = new Client({ name: "mio-ts-check", version: "0.0.0" });
await client.connect(transport);

const tools = (await client.listTools()).tools.map((t) => t.name);
const call = async (name, args) => {
  const res = await client.callTool({ name, arguments: args });
  if (res.isError) throw new Error(`${name}: ${res.content.map((c) => c.text).join(" ")}`);
  return res.structuredContent;
};
const pulled = await call("pull_messages", { consumer, max_messages: 1, wait: "20s" });
if (pulled.deliveries.length !== 1) throw new Error(`pulled ${pulled.deliveries.length} deliveries`);
const d = pulled.deliveries[0];
const first = await call("reply", { consumer, delivery_id: d.delivery_id, text: `answer to ${d.message.text}` });
const again = await call("reply", { consumer, delivery_id: d.delivery_id, text: `answer to ${d.message.text}` });
console.log(JSON.stringify({ tools, text: d.message.text, outbound_ids: [first.outbound_id, again.outbound_id] }));
await client.close();
