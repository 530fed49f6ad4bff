// examples/agents/mcp_sdk_agent.mjs: an agent written with the official MCP TypeScript SDK
// (npm @modelcontextprotocol/sdk), for authors who already use an MCP client. corral serves the
// tools on the agent's own stdin/stdout, so the agent's transport is the SDK's stdio transport
// pointed the other way: it reads answers from stdin and writes requests to stdout. Logs go to
// stderr (corral exec passes them through).
//
// Run it (from the repository, after `make deps`):
//   corral exec --workspace DIR \
//     --ro examples/agents/mcp_sdk_agent.mjs:/agent/agent.mjs \
//     --ro tests/mcp/node_modules:/agent/node_modules -- /usr/bin/node /agent/agent.mjs
//
// It lists its tools, reads README.md (or the first file it finds), writes a summary to
// NOTES.md, runs `wc -l` on both in a command sandbox, and shows that a path outside the
// workspace is refused.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const log = (...a) => console.error('[mcp-agent]', ...a);
const client = new Client({ name: 'corral-example-agent', version: '1.0.0' });
await client.connect(new StdioServerTransport());
const server = client.getServerVersion();
log(`connected to ${server.name} ${server.version}`);

const { tools } = await client.listTools();
log('tools:', tools.map((t) => `${t.name}${t.annotations?.readOnlyHint ? ' (read-only)' : ''}`).join(', '));

// Structured results carry the surface's own response object.
const call = async (name, args) => {
    const r = await client.callTool({ name, arguments: args });
    return { ok: !r.isError, value: r.structuredContent ?? JSON.parse(r.content[0].text) };
};

const listing = await call('exploreFiles', { path: '.', recursive: false });
// exploreFiles paths are rooted at the workspace ("/README.md"); commands run in /workspace.
const names = (listing.value.files ?? listing.value.entries ?? []).map((f) => (f.path ?? f.name ?? '').replace(/^\//, ''));
const target = names.includes('README.md') ? 'README.md' : names.find((n) => n && !n.endsWith('/')) ?? 'README.md';
const read = await call('readFile', { path: target });
const text = read.ok ? read.value.content : '';
log(`read ${target}: ${read.ok ? `${text.length} bytes` : JSON.stringify(read.value)}`);

const lines = text.split('\n');
const summary = `# Notes\n\n${target}: ${lines.length} lines; first line: ${lines[0] ?? ''}\n`;
const wrote = await call('writeFile', { path: 'NOTES.md', content: summary });
log('wrote NOTES.md:', wrote.ok ? 'ok' : JSON.stringify(wrote.value));

const wc = await call('executeCommand', { command: `wc -l ${target} NOTES.md` });
log('wc -l:', wc.ok ? wc.value.stdout.trim().replace(/\n/g, '; ') : JSON.stringify(wc.value));

const escape = await call('readFile', { path: '../../etc/passwd' });
log('outside the workspace:', escape.ok ? 'READ (unexpected)' : `refused (${escape.value.code})`);

await client.close();
process.exit(escape.ok ? 1 : 0);
