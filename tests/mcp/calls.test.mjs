// tests/mcp/calls.test.mjs: long calls as a host drives them through the official SDK:
// cancellation (notifications/cancelled) kills the command's sandbox, progress notifications
// for a request with a progressToken, approval through elicitation (accepted, declined, and
// refused with a how-to when the client cannot elicit), and a host that disconnects mid-call.
import { ok, finish, workspace, trailPath, policy, connect, raw, seed, descendants, alive, until, trailVerify, trailJson } from './lib.mjs';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import fs from 'node:fs';
import path from 'node:path';

const dbOf = () => trailPath();
const sleeper = (pid) => descendants(pid).find((p) => /^sleep 60/.test(p.cmd));

// ---- cancellation of `sleep 60` ----
{
    const ws = workspace({});
    const db = dbOf(ws);
    const { client, transport } = await connect(['--workspace', ws, '--trail', db]);
    const ac = new AbortController();
    const call = client.callTool({ name: 'executeCommand', arguments: { command: 'sleep 60', timeout: 120000 } },
        undefined, { signal: ac.signal, timeout: 120000 }).then((r) => ({ r }), (e) => ({ e }));
    const t = await until(() => sleeper(transport.pid));
    const s = sleeper(transport.pid);
    ok(t >= 0 && s, 'sleep 60 runs in a command sandbox below corral mcp', descendants(transport.pid));
    ac.abort('the person pressed stop');
    const gone = await until(() => !alive(s.pid), 10000);
    ok(gone >= 0, `cancelled: the command's sandbox is gone (${gone} ms after notifications/cancelled)`);
    const res = await call;
    ok(res.e && !res.r, 'the SDK call ends rejected (aborted), with no answer from the server', res);
    // The connection is still usable after a cancellation.
    const r = await client.callTool({ name: 'getWorkspaceInfo', arguments: {} });
    ok(!r.isError, 'the connection goes on after a cancellation', r);
    await client.close();
    const entries = trailJson(db);
    ok(entries.some((e) => e.type === 'tool_call' && e.body.phase === 'end' && e.body.outcome === 'cancelled'),
        'the trail records the call as cancelled', entries.filter((e) => e.type === 'tool_call').map((e) => e.body));
    ok(trailVerify(db).status === 0, 'the trail verifies after a cancellation');
}

// ---- progress ----
{
    const ws = workspace({});
    const { client } = await connect(['--workspace', ws]);
    const seen = [];
    const r = await client.callTool({ name: 'executeCommand', arguments: { command: 'sleep 3; echo done', timeout: 30000 } },
        undefined, { onprogress: (p) => seen.push(p), timeout: 60000 });
    ok(!r.isError && /done/.test(seed(r).stdout), 'a 3 s command with a progressToken completes', r);
    ok(seen.length >= 1, `progress notifications while it ran (${seen.length})`, seen);
    ok(seen.every((p, i) => i === 0 || p.progress > seen[i - 1].progress), 'progress increases with each notification', seen);
    const quick = [];
    await client.callTool({ name: 'getWorkspaceInfo', arguments: {} }, undefined, { onprogress: (p) => quick.push(p) });
    ok(quick.length === 0, 'a quick call sends no progress', quick);
    await client.close();
}

// ---- approval through elicitation ----
for (const answer of ['accept', 'decline']) {
    const ws = workspace({});
    const db = dbOf(ws);
    const pol = policy(ws, { surface: 'wap', extra: { authority: { write: true, commands: true }, tools: { needs_approval: ['writeFile', 'executeCommand'] } } });
    const { client } = await connect(['--workspace', ws, '--policy', pol, '--role', 'r', '--trail', db], { capabilities: { elicitation: {} } });
    const asked = [];
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
        asked.push(req.params);
        return answer === 'accept' ? { action: 'accept', content: { approve: true } } : { action: 'decline' };
    });
    const r = await client.callTool({ name: 'writeFile', arguments: { path: 'approved.txt', content: 'yes\n' } });
    ok(asked.length === 1 && /writeFile/.test(asked[0].message) && /approved\.txt/.test(asked[0].message),
        `${answer}: elicitation/create asks the person, naming the tool and the path`, asked);
    const c = await client.callTool({ name: 'executeCommand', arguments: { command: 'echo from-approval' } });
    ok(asked.length === 2 && /echo from-approval/.test(asked[1]?.message), `${answer}: a command's approval names the command`, asked);
    const written = fs.existsSync(path.join(ws, 'approved.txt'));
    if (answer === 'accept') {
        ok(!r.isError && written, 'accepted: the write runs', r);
        ok(!c.isError && /from-approval/.test(seed(c).stdout), 'accepted: the command runs', c);
    } else {
        ok(r.isError && !written && /declin/i.test(JSON.stringify(r)), 'declined: refused, nothing written', r);
        ok(c.isError, 'declined: the command does not run', c);
    }
    await client.close();
    const entries = trailJson(db);
    const gates = entries.filter((e) => e.type === 'gate_resolved');
    ok(gates.length === 2 && gates.every((g) => g.body.decision === (answer === 'accept' ? 'approved' : 'declined')),
        `${answer}: the decision is in the trail`, gates.map((g) => g.body));
    ok(trailVerify(db).status === 0, `${answer}: the trail verifies`);
}
{
    // The host cancels a call while the person is still being asked: the question is withdrawn
    // (notifications/cancelled of corral's own elicitation request), nothing runs.
    const ws = workspace({});
    const db = dbOf(ws);
    const pol = policy(ws, { surface: 'wap', extra: { authority: { write: true, commands: true }, tools: { needs_approval: ['writeFile'] } } });
    const { client } = await connect(['--workspace', ws, '--policy', pol, '--role', 'r', '--trail', db], { capabilities: { elicitation: {} } });
    let asked = 0, withdrawn = false;
    client.setRequestHandler(ElicitRequestSchema, (req, extra) => new Promise((resolve) => {
        asked++;
        extra.signal.addEventListener('abort', () => { withdrawn = true; resolve({ action: 'accept', content: { approve: true } }); });
    }));
    const ac = new AbortController();
    const call = client.callTool({ name: 'writeFile', arguments: { path: 'held.txt', content: 'x' } }, undefined, { signal: ac.signal })
        .then((r) => ({ r }), (e) => ({ e }));
    await until(() => asked === 1);
    ac.abort('changed my mind');
    const res = await call;
    ok(res.e, 'a held call cancelled by the host ends without an answer', res);
    ok(await until(() => withdrawn, 5000) >= 0, 'corral withdraws its question (notifications/cancelled of elicitation/create)');
    const r = await client.callTool({ name: 'getWorkspaceInfo', arguments: {} });
    ok(!r.isError && !fs.existsSync(path.join(ws, 'held.txt')), 'nothing was written, and the connection goes on', r);
    await client.close();
    const gates = trailJson(db).filter((e) => e.type === 'gate_resolved');
    ok(gates.length === 1 && gates[0].body.decision === 'cancelled', 'the trail says the approval was cancelled', gates.map((g) => g.body));
}
{
    // Without the elicitation capability: refused as before, with how to allow it.
    const ws = workspace({});
    const pol = policy(ws, { surface: 'wap', extra: { authority: { write: true, commands: true }, tools: { needs_approval: ['writeFile'] } } });
    const { client } = await connect(['--workspace', ws, '--policy', pol, '--role', 'r']);
    const r = await client.callTool({ name: 'writeFile', arguments: { path: 'x.txt', content: 'x' } });
    ok(r.isError && /elicitation/.test(JSON.stringify(r)) && /needs_approval/.test(JSON.stringify(r)),
        'no elicitation capability: refused, the message says how to allow it', r);
    await client.close();
}

// ---- a host that never answers its elicitations: bounded ----
{
    const ws = workspace({});
    const pol = policy(ws, { surface: 'wap', extra: { authority: { write: true, commands: true }, tools: { needs_approval: ['writeFile'] } } });
    const c = raw(['--workspace', ws, '--policy', pol, '--role', 'r']);
    c.send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'raw', version: '1' } } });
    await c.next((m) => m.id === 0);
    for (let i = 1; i <= 17; i++)
        c.send({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'writeFile', arguments: { path: `f${i}.txt`, content: 'x' } } });
    const refused = await c.next((m) => m.id === 17);
    const asks = c.got.filter((m) => m.method === 'elicitation/create');
    ok(asks.length === 16 && refused.error && /16 calls already wait/.test(refused.error.message),
        'at most 16 calls wait for approval; the 17th is refused at once', { asks: asks.length, refused });
    c.child.stdin.end();
    const e = await c.exited;
    ok(e.code === 0, 'closing with approvals pending ends the session cleanly', e, c.stderr());
}

// ---- SIGTERM to corral mcp mid-call ----
{
    const ws = workspace({});
    const db = dbOf(ws);
    const c = raw(['--workspace', ws, '--trail', db]);
    c.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    await c.next((m) => m.id === 1);
    c.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'executeCommand', arguments: { command: 'sleep 60', timeout: 120000 } } });
    await until(() => sleeper(c.child.pid));
    const s = sleeper(c.child.pid);
    c.child.kill('SIGTERM');
    const e = await Promise.race([c.exited, new Promise((r) => setTimeout(() => r('still running'), 15000))]);
    ok(e !== 'still running' && e.code === 0, 'SIGTERM ends corral mcp in order (status 0)', e, c.stderr());
    ok(s && !alive(s.pid), 'its running command was killed', s);
    const stop = trailJson(db).find((x) => x.type === 'supervisor_stopped');
    ok(stop && stop.body.reason === 'SIGTERM' && trailVerify(db).status === 0, 'the trail says why the session ended, and verifies', stop);
}

// ---- a host that disconnects mid-call ----
{
    const ws = workspace({});
    const db = dbOf(ws);
    const c = raw(['--workspace', ws, '--trail', db]);
    c.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    await c.next((m) => m.id === 1);
    c.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    c.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'executeCommand', arguments: { command: 'sleep 60', timeout: 120000 } } });
    await until(() => sleeper(c.child.pid));
    const s = sleeper(c.child.pid);
    ok(s, 'sleep 60 is running when the host goes away', descendants(c.child.pid));
    const below = descendants(c.child.pid).map((p) => p.pid);
    c.child.stdin.destroy();
    c.child.stdout.destroy();
    const e = await Promise.race([c.exited, new Promise((r) => setTimeout(() => r('still running'), 15000))]);
    ok(e !== 'still running' && e.code === 0, 'the host gone: corral mcp ends by itself', e, c.stderr());
    ok(below.every((p) => !alive(p)), 'nothing it started is left running', below.filter(alive));
    ok(trailVerify(db).status === 0, 'the trail verifies after the disconnect', trailVerify(db).stdout);
    const entries = trailJson(db);
    ok(entries.some((x) => x.type === 'tool_call' && x.body.phase === 'end' && x.body.outcome === 'cancelled'),
        'the interrupted call is recorded as cancelled', entries.map((x) => x.type));
}

finish();
