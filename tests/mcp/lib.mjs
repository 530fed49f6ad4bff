// tests/mcp/lib.mjs: what the MCP tests share: TAP output (tests/run.sh counts the lines), a
// scratch workspace owned by the sandbox user, `corral mcp` started the way a host starts it
// (the official SDK's Client over StdioClientTransport), a raw line client for what the SDK
// will not send, and the process checks (is a command's sandbox still there?).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { spawn, spawnSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

EventEmitter.defaultMaxListeners = 100; // one exit hook per scratch workspace

export const CORRAL = process.env.CORRAL || path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../build/corral');

let failed = 0;
export function ok(cond, name, ...evidence) {
    if (cond) {
        console.log(`ok - ${name}`);
    } else {
        failed++;
        console.log(`not ok - ${name}`);
        for (const e of evidence)
            for (const l of String(typeof e === 'string' ? e : JSON.stringify(e)).slice(0, 2000).split('\n'))
                console.log(`#   ${l}`);
    }
    return cond;
}
export const failures = () => failed;

/* A fresh directory the sandbox user (65534) can write, removed at exit. */
export function workspace(files = {}) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corral-mcp-'));
    for (const [name, content] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
        fs.writeFileSync(path.join(dir, name), content);
    }
    spawnSync('chown', ['-R', '65534:65534', dir]);
    process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    return dir;
}

/* A path for a trail in a fresh directory of root's, mode 0700 (corral refuses a trail whose
 * directory another user owns or could write, such as /tmp itself), removed at exit. */
export function trailPath() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corral-mcp-trail-'));
    process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    return path.join(dir, 'trail.db');
}

/* A policy file with one role "r" extending BASE, on SURFACE, with EXTRA merged in. */
export function policy(dir, { base = 'worker', surface = 'wap', extra = {} } = {}) {
    const file = path.join(dir, '..', `${path.basename(dir)}-policy.json`);
    const role = { extends: base, surface, ...extra };
    if (base === 'worker' && !extra.authority) role.authority = { write: true, commands: true };
    fs.writeFileSync(file, JSON.stringify({ version: 1, roles: { r: role } }, null, 2));
    process.on('exit', () => fs.rmSync(file, { force: true }));
    return file;
}

/* corral mcp ARGS through the SDK: the Client connected, its transport, the server's stderr. */
export async function connect(args, { capabilities = {}, name = 'corral-tests' } = {}) {
    const transport = new StdioClientTransport({ command: CORRAL, args: ['mcp', ...args], stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (d) => { stderr += d; });
    const client = new Client({ name, version: '1.0.0' }, { capabilities });
    await client.connect(transport);
    return { client, transport, stderr: () => stderr };
}

/* A raw line client: send(obj or string), next(pred) waits for a message matching pred. */
export function raw(args) {
    const child = spawn(CORRAL, ['mcp', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let buf = '', stderr = '';
    const got = [], lines = [], waiters = [];
    child.stderr.on('data', (d) => { stderr += d; });
    child.stdout.on('data', (d) => {
        buf += d;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, i);
            buf = buf.slice(i + 1);
            lines.push(line);
            let m;
            try { m = JSON.parse(line); } catch { m = { unparsable: line }; }
            got.push(m);
            for (const w of [...waiters]) if (w.pred(m)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(m); }
        }
    });
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    return {
        child, exited, got, lines, stderr: () => stderr,
        send(m) { child.stdin.write((typeof m === 'string' ? m : JSON.stringify(m)) + '\n'); },
        next(pred, ms = 20000) {
            const m = got.find(pred);
            if (m) return Promise.resolve(m);
            return new Promise((resolve, reject) => {
                const w = { pred, resolve };
                waiters.push(w);
                setTimeout(() => { waiters.splice(waiters.indexOf(w), 1); reject(new Error(`no matching message in ${ms} ms; got ${JSON.stringify(got).slice(0, 500)}`)); }, ms).unref();
            });
        },
    };
}

/* Every process below PID (children, their children, ...), with its command line. */
export function descendants(pid) {
    const kids = new Map();
    for (const d of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(d)) continue;
        try {
            const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
            const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
            if (!kids.has(ppid)) kids.set(ppid, []);
            kids.get(ppid).push(Number(d));
        } catch { /* gone meanwhile */ }
    }
    const out = [];
    const walk = (p) => {
        for (const k of kids.get(p) || []) {
            let cmd = '';
            try { cmd = fs.readFileSync(`/proc/${k}/cmdline`, 'utf8').replace(/\0/g, ' ').trim(); } catch { /* gone */ }
            out.push({ pid: k, cmd });
            walk(k);
        }
    };
    walk(pid);
    return out;
}

export function alive(pid) {
    try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
    } catch { return false; }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/* Polls COND every 20 ms until it holds or LIMIT ms pass; returns the ms it took, or -1. */
export async function until(cond, limit = 10000) {
    const t0 = Date.now();
    while (Date.now() - t0 < limit) {
        if (await cond()) return Date.now() - t0;
        await sleep(20);
    }
    return -1;
}

export function trailVerify(db) {
    return spawnSync(CORRAL, ['trail', 'verify', '--db', db], { encoding: 'utf8' });
}
export function trailJson(db) {
    const r = spawnSync(CORRAL, ['trail', '--db', db, '--json'], { encoding: 'utf8', maxBuffer: 64 << 20 });
    return r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/* The seed object of a tool result (structuredContent, or the JSON of its text). */
export function seed(result) {
    if (result.structuredContent) return result.structuredContent;
    try { return JSON.parse(result.content?.[0]?.text); } catch { return result.content?.[0]?.text; }
}

export function finish() {
    process.exitCode = failed ? 1 : 0;
}
