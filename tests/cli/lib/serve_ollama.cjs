// serve_ollama.cjs - `sluice serve`'s Ollama API through the official `ollama`
// npm client (tests/cli/serve_ollama.sh): version, tags, show, ps, chat and
// generate (streamed and not), tools, think, and the refusals. Greedy text
// on /api/chat and /api/generate must equal the same conversation's text on
// the server's OpenAI endpoints (fetched directly), and the counts must equal
// its usage.
//
// Usage: NODE_PATH=DIR/node_modules node serve_ollama.cjs PORT THINK_PORT HARMONY_PORT N_CTX FILE_SIZE
//   PORT: a server with a chatml template (tools, no thinking); THINK_PORT:
//   one with a thinking template (qwen3 family, "<think>" opened);
//   HARMONY_PORT: one with a harmony template (gpt-oss); N_CTX the servers'
//   -c; FILE_SIZE the model file's bytes.
// Prints "ok NAME" / "FAIL NAME: why" lines and "client-finished" at its end.
'use strict';
const { Ollama } = require('ollama');
const { check, step } = require('./sdk_check.cjs');

const [port, thinkPort, harmonyPort, nCtxStr, sizeStr] = process.argv.slice(2);
const nCtx = Number(nCtxStr);
const MODEL = 'm.gguf';

// The error an awaited ollama call raises: [status_code, message].
async function failure(p) {
    try {
        await p;
    } catch (e) {
        return [e.status_code, String(e.message)];
    }
    return [null, null];
}

// POST path on the server at p (the OpenAI side), the parsed answer.
async function oai(p, path, body) {
    const r = await fetch(`http://127.0.0.1:${p}${path}`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
    });
    return [r.status, await r.json()];
}

// Every part of a stream: [parts, content, thinking, response].
async function drain(it) {
    const parts = [];
    for await (const c of it) parts.push(c);
    const cat = (f) => parts.map(f).filter((x) => typeof x === 'string').join('');
    return [parts, cat((c) => c.message && c.message.content), cat((c) => (c.message ? c.message.thinking : c.thinking)),
            cat((c) => c.response)];
}

// The last part of a stream is the only done one and carries the counts.
function streamShape(name, parts) {
    const last = parts[parts.length - 1];
    check(name + ': parts before the last are not done, the last is, with done_reason and counts',
          parts.length >= 2 && parts.slice(0, -1).every((c) => c.done === false) && last.done === true &&
          typeof last.done_reason === 'string' && last.eval_count > 0 && last.prompt_eval_count > 0,
          parts.slice(-2));
}

(async () => {
    const ol = new Ollama({ host: `http://127.0.0.1:${port}` });
    const th = new Ollama({ host: `http://127.0.0.1:${thinkPort}` });
    const opts = { temperature: 0, num_predict: 8 };

    await step('version', async () => {
        const v = await ol.version();
        check('version: a numeric x.y.z release clients accept', /^\d+\.\d+\.\d+$/.test(v.version) &&
              Number(v.version.split('.')[1]) >= 6, v);
    });
    await step('list', async () => {
        const l = await ol.list();
        const m = l.models[0] || {};
        const d = m.details || {};
        check('list: the one model, tagged, with its file size, digest and details',
              l.models.length === 1 && m.name === MODEL + ':latest' && m.model === m.name &&
              m.size === Number(sizeStr) && /^[0-9a-f]{64}$/.test(m.digest) && d.format === 'gguf' &&
              d.family === 'qwen3moe' && /^(F32|F16|BF16|Q\d\w*)$/.test(d.quantization_level) &&
              /^\d+(\.\d)?[KMB]?$/.test(d.parameter_size) && !isNaN(Date.parse(m.modified_at)), l);
    });
    await step('show', async () => {
        const s = await ol.show({ model: MODEL + ':latest' });
        const mi = s.model_info || {};
        check('show: capabilities completion and tools, not thinking (chatml)',
              s.capabilities.includes('completion') && s.capabilities.includes('tools') &&
              !s.capabilities.includes('thinking'), s.capabilities);
        check('show: model_info has the architecture, a slot\'s context and the parameter count',
              mi['general.architecture'] === 'qwen3moe' && mi['qwen3moe.context_length'] === nCtx &&
              mi['general.parameter_count'] > 0 && typeof mi['qwen3moe.block_count'] === 'number', mi);
        check('show: details and the parameters', s.details.format === 'gguf' &&
              s.details.family === 'qwen3moe' && /num_ctx 1024/.test(s.parameters), [s.details, s.parameters]);
        const [st, msg] = await failure(ol.show({ model: 'llama3.2' }));
        check('show: an unknown model is a 404 naming it', st === 404 && /llama3\.2/.test(msg), [st, msg]);
        const t = await th.show({ model: MODEL });
        check('show: a thinking template has the thinking capability', t.capabilities.includes('thinking'),
              t.capabilities);
    });
    await step('ps', async () => {
        const p = await ol.ps();
        const m = p.models[0] || {};
        check('ps: the loaded model with its context', p.models.length === 1 && m.name === MODEL + ':latest' &&
              m.context_length === nCtx && !isNaN(Date.parse(m.expires_at)), p);
    });

    const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hello.' }];
    let ref = null;
    await step('chat', async () => {
        const [st, o] = await oai(port, '/v1/chat/completions', { messages, temperature: 0, max_tokens: 8 });
        ref = o.choices[0].message.content;
        const r = await ol.chat({ model: MODEL, messages, options: opts, stream: false });
        check('chat: greedy text equals /v1/chat/completions\'s', st === 200 && r.message.content === ref &&
              r.message.role === 'assistant' && ref.length > 0, [r.message, ref]);
        check('chat: done, done_reason and counts equal the OpenAI usage',
              r.done === true && r.done_reason === (o.choices[0].finish_reason === 'length' ? 'length' : 'stop') &&
              r.eval_count === o.usage.completion_tokens && r.prompt_eval_count === o.usage.prompt_tokens, [r, o.usage]);
        check('chat: durations in nanoseconds that add up', r.total_duration > 0 && r.eval_duration > 0 &&
              r.total_duration >= r.load_duration + r.prompt_eval_duration + r.eval_duration &&
              r.total_duration < 600e9 && !isNaN(Date.parse(r.created_at)), r);
    });
    await step('chat stream', async () => {
        const [parts, text] = await drain(await ol.chat({ model: MODEL, messages, options: opts, stream: true }));
        check('chat stream: the parts give the same text', text === ref, [text, ref]);
        streamShape('chat stream', parts);
    });
    await step('chat: options map to sampling', async () => {
        const [, o] = await oai(port, '/v1/chat/completions', { messages, temperature: 0.9, top_k: 5, top_p: 0.8,
                                                              min_p: 0.05, seed: 11, repeat_penalty: 1.3,
                                                              max_tokens: 3, stop: ['\n\n\n'] });
        const r = await ol.chat({ model: MODEL, messages, stream: false,
                                  options: { temperature: 0.9, top_k: 5, top_p: 0.8, min_p: 0.05, seed: 11,
                                             repeat_penalty: 1.3, num_predict: 3, stop: ['\n\n\n'], num_ctx: 512,
                                             num_gpu: 99, num_thread: 4, use_mmap: true } });
        check('chat: sampled text with options equals the OpenAI fields\' (seeded), num_predict 3 limits it',
              r.message.content === o.choices[0].message.content && r.eval_count === o.usage.completion_tokens &&
              r.eval_count <= 3, [r, o]);
    });
    await step('generate', async () => {
        const [, o] = await oai(port, '/v1/chat/completions', { messages, temperature: 0, max_tokens: 8 });
        const r = await ol.generate({ model: MODEL, system: 'Be brief.', prompt: 'Say hello.', options: opts });
        check('generate: greedy response equals the chat\'s (system and prompt through the template)',
              r.response === o.choices[0].message.content && r.done === true && r.eval_count > 0, [r, o]);
        const [parts, , , text] = await drain(await ol.generate({ model: MODEL, system: 'Be brief.',
                                                                  prompt: 'Say hello.', options: opts, stream: true }));
        check('generate stream: the parts give the same response', text === r.response, [text, r.response]);
        streamShape('generate stream', parts);
        const [, c] = await oai(port, '/v1/completions', { prompt: 'Once upon a time', temperature: 0, max_tokens: 8 });
        const raw = await ol.generate({ model: MODEL, prompt: 'Once upon a time', raw: true, options: opts });
        check('generate raw: the prompt as it is, as /v1/completions', raw.response === c.choices[0].text, [raw, c]);
    });
    await step('tools', async () => {
        const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city',
                                                        parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
        const convo = [{ role: 'user', content: 'Weather in Paris?' },
                       { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }] },
                       { role: 'tool', tool_name: 'get_weather', content: '{"temp": 21}' }];
        const oconvo = [convo[0],
                        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function',
                          function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
                        { role: 'tool', tool_call_id: 'c1', content: '{"temp": 21}' }];
        const [st, o] = await oai(port, '/v1/chat/completions', { messages: oconvo, tools, temperature: 0, max_tokens: 8 });
        const r = await ol.chat({ model: MODEL, messages: convo, tools, options: opts });
        // the random weights do not choose to call a tool: the round trip is
        // checked as the rendered prompt (its length) and the same answer
        check('tools: a call (object arguments) and its result (tool_name) render as the OpenAI form does',
              st === 200 && r.prompt_eval_count === o.usage.prompt_tokens &&
              r.message.content === (o.choices[0].message.content || '') && !r.message.tool_calls, [r, o]);
        const bare = await ol.chat({ model: MODEL, messages: convo.slice(0, 1), options: opts });
        const withTools = await ol.chat({ model: MODEL, messages: convo.slice(0, 1), tools, options: opts });
        check('tools: declared tools lengthen the prompt', withTools.prompt_eval_count > bare.prompt_eval_count + 20,
              [bare.prompt_eval_count, withTools.prompt_eval_count]);
    });
    await step('think', async () => {
        const [, o] = await oai(thinkPort, '/v1/chat/completions', { messages, temperature: 0, max_tokens: 8 });
        const r = await th.chat({ model: MODEL, messages, think: true, options: opts });
        const want = o.choices[0].message;
        check('think true: the reasoning comes as message.thinking, as reasoning_content on /v1',
              typeof r.message.thinking === 'string' && r.message.thinking.length > 0 &&
              r.message.thinking === want.reasoning_content && r.message.content === (want.content || ''), [r.message, want]);
        const [parts, text, thinking] = await drain(await th.chat({ model: MODEL, messages, think: true, options: opts, stream: true }));
        check('think true, streamed: the thinking parts give the same reasoning', thinking === r.message.thinking &&
              text === r.message.content, [thinking, text, r.message]);
        streamShape('think stream', parts);
        const g = await th.generate({ model: MODEL, prompt: 'Say hello.', think: true, options: opts });
        check('think true on generate: the reasoning comes as thinking', typeof g.thinking === 'string' &&
              g.thinking.length > 0, g);
        const [, o2] = await oai(thinkPort, '/v1/chat/completions', { messages, temperature: 0, max_tokens: 8,
                                                                    chat_template_kwargs: { enable_thinking: false } });
        const off = await th.chat({ model: MODEL, messages, think: false, options: opts });
        check('think false: the template\'s thinking is off (the answer equals enable_thinking false on /v1)',
              off.message.content === (o2.choices[0].message.content || '') && !off.message.thinking &&
              off.prompt_eval_count === o2.usage.prompt_tokens && off.prompt_eval_count > r.prompt_eval_count, [off, o2]);
        const [st, msg] = await failure(ol.chat({ model: MODEL, messages, think: true, options: opts }));
        check('think true on a template without thinking: 400 saying so', st === 400 && /does not support thinking/.test(msg),
              [st, msg]);
    });
    await step('think levels (harmony)', async () => {
        const hm = new Ollama({ host: `http://127.0.0.1:${harmonyPort}` });
        for (const [think, effort] of [['high', 'high'], [false, 'low']]) {
            const [, o] = await oai(harmonyPort, '/v1/chat/completions', { messages, temperature: 0, max_tokens: 8,
                                                                         reasoning_effort: effort });
            const r = await hm.chat({ model: MODEL, messages, think, options: opts });
            const want = o.choices[0].message;
            check(`think ${JSON.stringify(think)} on harmony: reasoning effort ${effort}, the same answer and prompt`,
                  r.prompt_eval_count === o.usage.prompt_tokens && r.message.content === (want.content || '') &&
                  (r.message.thinking || '') === (want.reasoning_content || ''), [r, o]);
        }
    });
    await step('refusals', async () => {
        const cases = [
            ['format json', () => ol.chat({ model: MODEL, messages, format: 'json' }), 400, /format/],
            ['format as a schema', () => ol.generate({ model: MODEL, prompt: 'x', format: { type: 'object' } }), 400, /format/],
            ['num_ctx above a slot\'s context', () => ol.chat({ model: MODEL, messages, options: { num_ctx: nCtx * 4 } }), 400,
             new RegExp(`num_ctx is ${nCtx * 4}`)],
            ['mirostat', () => ol.chat({ model: MODEL, messages, options: { mirostat: 2 } }), 400, /mirostat/],
            ['a bad temperature', () => ol.chat({ model: MODEL, messages, options: { temperature: 'hot' } }), 400, /temperature/],
            ['an image', () => ol.chat({ model: MODEL, messages: [{ role: 'user', content: 'What?', images: ['aGk='] }] }), 400, /images/],
            ['a bad role', () => ol.chat({ model: MODEL, messages: [{ role: 'wizard', content: 'hi' }] }), 400, /role/],
            ['embed', () => ol.embed({ model: MODEL, input: 'hi' }), 501, /embeddings/],
            ['embeddings', () => ol.embeddings({ model: MODEL, prompt: 'hi' }), 501, /embeddings/],
            ['pull', () => ol.pull({ model: 'llama3.2' }), 501, /sluice serve -m/],
            ['push', () => ol.push({ model: 'me/m' }), 501, /uploads none/],
            ['create', () => ol.create({ model: 'x', from: MODEL }), 501, /no model library/],
            ['copy', () => ol.copy({ source: MODEL, destination: 'y' }), 501, /no model library/],
            ['delete', () => ol.delete({ model: MODEL }), 501, /no model library/],
        ];
        for (const [name, call, want, re] of cases) {
            const [st, msg] = await failure(call());
            check(`refused: ${name} (${want}, saying why)`, st === want && re.test(msg), [st, msg]);
        }
        const l = await ol.chat({ model: MODEL, messages: [] });
        check('chat with no messages: the "load" answer', l.done === true && l.done_reason === 'load', l);
    });
    console.log('client-finished');
})();
