// serve_twins.cjs - asks two running `sluice serve`s (say the Linux build
// and the Windows exe under wine, on the same model) the same requests
// through the official client libraries (`openai`, `@anthropic-ai/sdk`)
// and checks that they answer with the same texts: OpenAI completions and
// chat, plain and streamed, Anthropic messages, plain and streamed, and the
// same error status for the same bad request.
//
// Usage: NODE_PATH=DIR/node_modules node serve_twins.cjs PORT_A PORT_B KEY LABEL
// Prints "ok NAME" / "FAIL NAME: why" lines (sdk_check.cjs), then
// "client-finished".
'use strict';
const OpenAI = require('openai');
const AnthropicMod = require('@anthropic-ai/sdk');
const Anthropic = AnthropicMod.Anthropic || AnthropicMod.default || AnthropicMod;
const { check, step, failure } = require('./sdk_check.cjs');

const [portA, portB, key, label] = process.argv.slice(2);
const clients = [portA, portB].map((port) => ({
    oa: new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: key, maxRetries: 0 }),
    an: new Anthropic({ baseURL: `http://127.0.0.1:${port}`, apiKey: key, maxRetries: 0 }),
}));
const messages = [{ role: 'system', content: 'You are brief.' }, { role: 'user', content: 'Tell me about rivers.' }];

// Runs ask(client) against both servers and checks that the texts agree
// (and are not empty: an empty pair would agree about nothing).
async function same(name, ask) {
    await step(name, async () => {
        const a = await ask(clients[0]);
        const b = await ask(clients[1]);
        check(`${label}${name}: the same text from both servers`, a === b && a.length > 0, [a, b]);
    });
}

(async () => {
    await same('openai completions', async (c) =>
        (await c.oa.completions.create({ model: 'm', prompt: 'The river', max_tokens: 16, temperature: 0 }))
            .choices[0].text);
    await same('openai streamed completions', async (c) => {
        let t = '';
        const s = await c.oa.completions.create({ model: 'm', prompt: 'The river', max_tokens: 16, temperature: 0, stream: true });
        for await (const ch of s) t += ch.choices.length ? ch.choices[0].text || '' : '';
        return t;
    });
    await same('openai chat', async (c) =>
        (await c.oa.chat.completions.create({ model: 'm', messages, max_tokens: 16, temperature: 0 }))
            .choices[0].message.content);
    await same('openai streamed chat', async (c) => {
        let t = '';
        const s = await c.oa.chat.completions.create({ model: 'm', messages, max_tokens: 16, temperature: 0, stream: true });
        for await (const ch of s) t += ch.choices.length ? ch.choices[0].delta.content || '' : '';
        return t;
    });
    await same('openai sampled chat (seed 3)', async (c) =>
        (await c.oa.chat.completions.create({ model: 'm', messages, max_tokens: 16, temperature: 0.9, seed: 3 }))
            .choices[0].message.content);
    const anReq = { model: 'm', max_tokens: 16, temperature: 0, system: 'You are brief.',
                    messages: [{ role: 'user', content: 'Tell me about rivers.' }] };
    await same('anthropic messages', async (c) =>
        (await c.an.messages.create(anReq)).content.map((b) => b.text || '').join(''));
    await same('anthropic streamed messages', async (c) => {
        let t = '';
        const s = c.an.messages.stream(anReq);
        s.on('text', (x) => { t += x; });
        await s.finalMessage();
        return t;
    });
    await step('bad request', async () => {
        const bad = { model: 'm', messages, max_tokens: 4, top_p: 0 };
        const [sa] = await failure(clients[0].oa.chat.completions.create(bad));
        const [sb, mb] = await failure(clients[1].oa.chat.completions.create(bad));
        check(`${label}a bad request (top_p 0) is the same 400 from both servers`,
              sa === 400 && sb === 400 && /top_p/.test(mb), [sa, sb, mb]);
    });
    console.log('client-finished');
})();
