// tests/mcp/server.test.mjs: `corral mcp` as an MCP host sees it, through the official
// TypeScript SDK's Client (and a raw line client for what the SDK never sends): version
// negotiation at each revision, capabilities, tools/list with annotations and outputSchema,
// every tool of every surface, an escape refused and logged, and the protocol faults of issue 13.
import { ok, finish, workspace, trailPath, policy, connect, raw, seed, trailVerify, trailJson } from './lib.mjs';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const VERSIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'];
const init = (id, v, caps = {}) => ({ jsonrpc: '2.0', id, method: 'initialize',
    params: { protocolVersion: v, capabilities: caps, clientInfo: { name: 'raw', version: '1' } } });

const files = {
    'a.txt': 'hello world\nsecond line\n',
    'm.py': 'import os\n\nclass Greeter:\n    def hello(self):\n        return "hello"\n\ndef main():\n    Greeter().hello()\n',
    'skills/demo/SKILL.md': '---\nname: demo\ndescription: a demo skill for hello\n---\n# Demo\nSay hello. See [the reference](references/ref.md), run [the script](scripts/run.sh), show [the logo](assets/logo.txt).\n',
    'skills/demo/references/ref.md': 'reference\n',
    'skills/demo/scripts/run.sh': 'echo hi\n',
    'skills/demo/assets/logo.txt': 'asset\n',
};

// ---- version negotiation, each revision, raw ----
{
    const ws = workspace(files);
    for (const v of VERSIONS) {
        const c = raw(['--workspace', ws]);
        c.send(init(1, v));
        const r = await c.next((m) => m.id === 1);
        ok(r.result?.protocolVersion === v, `initialize ${v}: the server answers with the client's version`, r);
        ok(r.result?.capabilities?.tools && r.result?.capabilities?.logging, `initialize ${v}: tools and logging capabilities`, r.result?.capabilities);
        ok(r.result?.serverInfo?.name === 'corral', `initialize ${v}: serverInfo names corral`, r.result?.serverInfo);
        c.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
        c.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
        const l = await c.next((m) => m.id === 2);
        ok(Array.isArray(l.result?.tools) && l.result.tools.length === 7, `${v}: tools/list gives the WAP surface's 7 tools`, l);
        c.child.stdin.end();
        const e = await c.exited;
        ok(e.code === 0, `${v}: stdin closed: corral mcp exits 0`, e, c.stderr());
    }
    const c = raw(['--workspace', ws]);
    c.send(init(1, '2023-01-01'));
    const r = await c.next((m) => m.id === 1);
    ok(r.result?.protocolVersion === '2025-11-25', 'an unknown version is answered with the newest the server speaks', r);
    c.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
    const p = await c.next((m) => m.id === 2);
    ok(p.result && Object.keys(p.result).length === 0, 'ping answers {}', p);

    // Fault (a): a valid request with \u0000 in a string is answered with its own id.
    c.send('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"readFile","arguments":{"path":"a\\u0000.txt"}}}');
    const z = await c.next((m) => m.id === 7 || (m.id === null && m.error));
    ok(z.id === 7 && z.error?.code === -32602, '\\u0000 in a string: answered with the request\'s id (invalid params), not id null', z);
    c.send('{"jsonrpc":"2.0","id":"s\\u0000x","method":"ping"}');
    const zz = await c.next((m) => m.error && (m.id === null || typeof m.id === 'string'));
    ok(zz.id === null, '\\u0000 inside the id itself: id null (the id cannot be echoed faithfully)', zz);
    // Issue 12: an id the parser reads but cJSON cannot print (1e400) is echoed as sent.
    c.send('{"jsonrpc":"2.0","id":1e400,"method":"ping"}');
    await c.next((m) => m.result && m.id === Infinity);
    ok(c.lines.includes('{"jsonrpc":"2.0","id":1e400,"result":{}}'), 'id 1e400: echoed as sent, not null', c.lines.slice(-3));
    c.send('{"jsonrpc":"2.0","id":12345678901234567890123,"method":"ping"}');
    await c.next((m) => m.result && m.id > 1e20 && m.id !== Infinity);
    ok(c.lines.includes('{"jsonrpc":"2.0","id":12345678901234567890123,"result":{}}'), 'a 23-digit id is echoed digit for digit', c.lines.slice(-3));
    // Hosts that declare roots tell of changes; many of them are not abuse.
    for (let i = 0; i < 150; i++) c.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
    c.send({ jsonrpc: '2.0', id: 'after-roots', method: 'ping' });
    const pr = await c.next((m) => m.id === 'after-roots');
    ok(pr.result, '150 notifications/roots/list_changed: ignored, the connection stays', pr);
    c.send('{"jsonrpc":"2.0","id":5,"method":"tools/call",');
    const bad = await c.next((m) => m.error && m.id === null);
    ok(bad.error.code === -32700, 'an unreadable line: -32700 with id null', bad);
    c.child.stdin.end();
    await c.exited;
}

// ---- the SDK client: tools/list shape, every tool of every surface ----
const ARGS = {
    wap: {
        getWorkspaceInfo: {}, exploreFiles: { path: '.', recursive: true }, readFile: { path: 'a.txt' },
        searchFiles: { paths: ['.'], query: 'hello', type: 'literal', recursive: true },
        writeFile: { path: 'new.txt', content: 'x\n' },
        modifyFile: { path: 'a.txt', operations: [{ type: 'replace', startLine: 1, endLine: 1, newContent: 'HELLO' }] },
        executeCommand: { command: 'echo hi' },
    },
    file: {
        'file.read': { path: 'a.txt' }, 'file.list': {}, 'file.search': { pattern: 'hello' },
        'file.write': { path: 'n.txt', content: 'x\n' },
        'file.patch': { path: 'a.txt', patches: [{ find: 'hello', replace: 'bye' }] },
        'file.delete': { path: 'n.txt' },
    },
    kward: {
        list_directory: { path: '.' }, read_file: { path: 'a.txt' }, summarize_file_structure: { path: 'm.py' },
        context_for_task: { task: 'where is hello' }, context_budget_stats: {},
        write_file: { path: 'n.txt', content: 'x\n' }, edit_file: { path: 'a.txt', edits: [{ old_text: 'hello', new_text: 'bye' }] },
        run_shell_command: { command: 'echo hi' },
    },
    voltagent: {
        ls: { path: '/' }, read_file: { file_path: '/a.txt' }, stat: { path: '/a.txt' }, list_tree: {}, list_files: {},
        glob: { pattern: '*.txt' }, grep: { pattern: 'hello' },
        write_file: { file_path: '/n.txt', content: 'x\n' },
        edit_file: { file_path: '/a.txt', old_string: 'hello', new_string: 'bye' },
        delete_file: { file_path: '/n.txt' }, mkdir: { path: '/d' }, rmdir: { path: '/d' },
        execute_command: { command: 'echo', args: ['hi'] },
        workspace_index: {}, workspace_index_content: { path: 'mem/x', content: 'hello there', metadata: null },
        workspace_search: { query: 'hello' }, workspace_list_skills: {}, workspace_search_skills: { query: 'hello' },
        workspace_read_skill: { skill_id: 'demo' }, workspace_activate_skill: { skill_id: 'demo' },
        workspace_deactivate_skill: { skill_id: 'demo' },
        workspace_read_skill_reference: { skill_id: 'demo', reference: 'references/ref.md' },
        workspace_read_skill_script: { skill_id: 'demo', script: 'scripts/run.sh' },
        workspace_read_skill_asset: { skill_id: 'demo', asset: 'assets/logo.txt' },
    },
};
const WRITES = /write|modify|patch|delete|edit|mkdir|rmdir/i;
const COMMANDS = /command|shell/i;

for (const surface of Object.keys(ARGS)) {
    const ws = workspace(files);
    const pol = policy(ws, { surface });
    const { client, transport, stderr } = await connect(['--workspace', ws, '--policy', pol, '--role', 'r']);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    ok(JSON.stringify(names) === JSON.stringify(Object.keys(ARGS[surface]).sort()),
        `${surface}: tools/list names exactly the surface's tools`, names);
    for (const t of tools) {
        const a = t.annotations || {};
        const isCmd = COMMANDS.test(t.name), isWrite = !isCmd && WRITES.test(t.name);
        ok(t.inputSchema?.type === 'object', `${surface}/${t.name}: inputSchema is an object schema`, t.inputSchema);
        ok(typeof a.readOnlyHint === 'boolean' && typeof a.destructiveHint === 'boolean' &&
            typeof a.idempotentHint === 'boolean' && typeof a.openWorldHint === 'boolean',
            `${surface}/${t.name}: annotations carry the four hints`, a);
        ok(a.readOnlyHint === !(isCmd || isWrite), `${surface}/${t.name}: readOnlyHint ${!(isCmd || isWrite)}`, a);
        ok(a.openWorldHint === false, `${surface}/${t.name}: openWorldHint false (the workspace only; no network)`, a);
        ok(!t.outputSchema || t.outputSchema.type === 'object', `${surface}/${t.name}: outputSchema, when given, is an object schema`, t.outputSchema);
    }
    for (const t of tools) {
        let r, err;
        try { r = await client.callTool({ name: t.name, arguments: ARGS[surface][t.name] }); } catch (e) { err = e; }
        ok(r && !r.isError, `${surface}/${t.name}: called through corral mcp`, err?.message || r, stderr());
        if (r && t.outputSchema) ok(r.structuredContent && typeof r.structuredContent === 'object',
            `${surface}/${t.name}: structuredContent with its outputSchema`, r);
    }
    await client.close();
}

// ---- an escape refused, and the denial sent as a log message ----
{
    const ws = workspace(files);
    fs.symlinkSync('/etc/passwd', path.join(ws, 'out'));
    const db = trailPath();
    const { client } = await connect(['--workspace', ws, '--trail', db]);
    const logs = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
    await client.setLoggingLevel('info');
    for (const p of ['../../etc/passwd', 'out', 'sub/../../x']) {
        const r = await client.callTool({ name: 'readFile', arguments: { path: p } });
        const s = seed(r);
        ok(r.isError && s.code === 'PERMISSION_DENIED' && !/root:x:0/.test(JSON.stringify(r)), `escape refused: readFile ${p}`, r);
    }
    // An absolute path names a file of the workspace (WAP paths are rooted there), never the host's.
    const abs = await client.callTool({ name: 'readFile', arguments: { path: '/etc/passwd' } });
    ok(abs.isError && seed(abs).code === 'FILE_NOT_FOUND' && !/root:x:0/.test(JSON.stringify(abs)), 'readFile /etc/passwd is the workspace\'s /etc/passwd: not found', abs);
    const w = await client.callTool({ name: 'writeFile', arguments: { path: '../escaped.txt', content: 'x' } });
    ok(w.isError && !fs.existsSync(path.join(ws, '..', 'escaped.txt')), 'escape refused: writeFile ../escaped.txt', w);
    ok(logs.some((l) => l.level === 'warning' && /denied|refused/i.test(JSON.stringify(l.data))),
        'a denial is sent to the host as notifications/message (warning)', logs);
    // Faults (b) and (c): endless output stops at the cap, answered normally; NUL keeps the rest.
    const y = await client.callTool({ name: 'executeCommand', arguments: { command: 'yes', timeout: 20000 } });
    const ys = seed(y);
    ok(!y.isError && ys.isOutputTruncated === true && ys.stdout?.length > 0 && ys.stdout.length <= 1048576, 'yes: stopped at the output cap, truncated set, not TIMEOUT', JSON.stringify(ys).slice(0, 400));
    const nul = await client.callTool({ name: 'executeCommand', arguments: { command: "printf 'before\\000after'" } });
    const ns = seed(nul);
    ok(!nul.isError && /before.*after/s.test(ns.stdout), 'a NUL in stdout: the text after it is kept', ns);
    await client.close();
    const v = trailVerify(db);
    ok(v.status === 0, 'the trail of the session verifies', v.stdout, v.stderr);
    const entries = trailJson(db);
    ok(entries.some((e) => e.type === 'denial'), 'the trail holds the denials', entries.map((e) => e.type));
    ok(entries.filter((e) => e.type === 'protocol_message').length >= 10, 'the trail holds every protocol message', entries.length);
}

// ---- faults (d) and (e): Kward's big-file default, WAP's size check first ----
{
    const lines = Array.from({ length: 2500 }, (_, i) => `l${i + 1}`).join('\n') + '\n';
    const ws = workspace({ 'many.txt': lines });
    const pol = policy(ws, { surface: 'kward' });
    const { client } = await connect(['--workspace', ws, '--policy', pol, '--role', 'r']);
    const r = await client.callTool({ name: 'read_file', arguments: { path: 'many.txt' } });
    const text = JSON.stringify(seed(r));
    ok(!r.isError && /l120\b/.test(text) && !/l121\b/.test(text) && /outline/i.test(text),
        'kward read_file, 2,500 lines under 50 KB, no options: outline plus the first 120 lines', text.slice(0, 600));
    await client.close();

    const ws2 = workspace({});
    execFileSync('truncate', ['-s', '10G', path.join(ws2, 'sparse.bin')]);
    const c2 = await connect(['--workspace', ws2]);
    const s = await c2.client.callTool({ name: 'readFile', arguments: { path: 'sparse.bin' } });
    ok(s.isError && seed(s).code === 'SIZE_LIMIT_EXCEEDED', 'WAP readFile of a 10 GiB sparse file: SIZE_LIMIT_EXCEEDED', seed(s));
    await c2.client.close();
}

// ---- a host's commands run in sandboxes prepared while it was idle ----
// corral mcp has no agent sandbox for its commands to nest in; the next command's sandbox is
// prepared in the background all the same once one ends (sandbox/warm.c). Seen from inside: the
// sandbox's init (pid 1) started well before the command it runs, not with it.
{
    const ws = workspace({});
    const { client } = await connect(['--workspace', ws]);
    const first = await client.callTool({ name: 'executeCommand', arguments: { command: 'true' } });
    ok(!first.isError, 'a first command runs', first);
    await new Promise((r) => setTimeout(r, 1500));
    const r = await client.callTool({ name: 'executeCommand', arguments: { command: "cut -d' ' -f22 /proc/1/stat /proc/self/stat" } });
    const [init, self] = seed(r).stdout.trim().split('\n').map(Number);
    ok(!r.isError && self - init >= 50,
        `the next command's sandbox was prepared while the host was idle (its init ${self - init} ticks older than the command)`, r);
    await client.close();
}

finish();
