// serve_sdk.cjs - drives a running `sluice serve` with the official client
// libraries (the `openai` and `@anthropic-ai/sdk` npm packages), so that the
// wire format is checked by someone else's parser. For tests/cli/serve.sh.
//
// Usage: NODE_PATH=DIR/node_modules node serve_sdk.cjs PORT KEY EXPECTED_FILE PROMPT N
// Prints "ok NAME" / "FAIL NAME: why" lines.
'use strict';
const fs = require('fs');
const OpenAI = require('openai');
const AnthropicMod = require('@anthropic-ai/sdk');
const Anthropic = AnthropicMod.Anthropic || AnthropicMod.default || AnthropicMod;
const { check, step } = require('./sdk_check.cjs');

const [port, key, expectedFile, prompt, nStr] = process.argv.slice(2);
const n = Number(nStr);
const expected = fs.readFileSync(expectedFile, 'utf8');

(async () => {
    const oa = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: key, maxRetries: 0 });
    const chatReq = {
        model: 'm.gguf', max_tokens: 12, temperature: 0,
        messages: [{ role: 'system', content: 'You are brief.' }, { role: 'user', content: 'Say something.' }],
    };
    let answer = null;
    await step('openai: models.list', async () => {
        const page = await oa.models.list();
        check('openai: models.list names the model', page.data.length === 1 && page.data[0].id === 'm.gguf', page.data);
    });
    await step('openai: completions.create', async () => {
        const r = await oa.completions.create({ model: 'm.gguf', prompt, max_tokens: n, temperature: 0 });
        check('openai: completions.create gives sluice run\'s text', r.choices[0].text === expected, [r.choices[0].text, expected]);
    });
    await step('openai: chat.completions.create', async () => {
        const r = await oa.chat.completions.create(chatReq);
        answer = r.choices[0].message.content;
        check('openai: chat.completions.create answers as the assistant',
              r.choices[0].message.role === 'assistant' && typeof answer === 'string' && r.usage.completion_tokens <= 12, r);
    });
    await step('openai: streamed chat', async () => {
        const stream = await oa.chat.completions.create({ ...chatReq, stream: true, stream_options: { include_usage: true } });
        let text = '', usage = null, chunks = 0;
        for await (const c of stream) {
            chunks++;
            if (c.choices.length) text += c.choices[0].delta.content || '';
            if (c.usage) usage = c.usage;
        }
        check('openai: the streamed chat joins to the same answer, with usage at the end',
              text === answer && usage && usage.completion_tokens > 0 && chunks > 2, [text, answer, usage, chunks]);
    });
    await step('openai: a bad request', async () => {
        let status = null, msg = null;
        try {
            await oa.chat.completions.create({ ...chatReq, top_p: 0 });
        } catch (e) {
            status = e.status;
            msg = e.message;
        }
        check('openai: a bad request raises APIError 400 with the server\'s message',
              status === 400 && /top_p/.test(msg), [status, msg]);
    });
    await step('openai: a wrong key', async () => {
        const bad = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'nope', maxRetries: 0 });
        let status = null;
        try {
            await bad.models.list();
        } catch (e) {
            status = e.status;
        }
        check('openai: a wrong key raises AuthenticationError (401)', status === 401, status);
    });

    const an = new Anthropic({ baseURL: `http://127.0.0.1:${port}`, apiKey: key, maxRetries: 0 });
    const msgReq = {
        model: 'm.gguf', max_tokens: 12, temperature: 0, system: 'You are brief.',
        messages: [{ role: 'user', content: 'Say something.' }],
    };
    let mtext = null;
    await step('anthropic: messages.create', async () => {
        const m = await an.messages.create(msgReq);
        mtext = m.content[0].text;
        check('anthropic: messages.create gives the chat completion\'s text',
              m.type === 'message' && m.content[0].type === 'text' && mtext === answer, [m, answer]);
    });
    await step('anthropic: messages.stream', async () => {
        const s = an.messages.stream(msgReq);
        let text = '';
        s.on('text', (t) => { text += t; });
        const final = await s.finalMessage();
        check('anthropic: messages.stream: the text events and the final message agree',
              text === mtext && final.content[0].text === mtext && final.stop_reason !== null, [text, final]);
    });
    await step('anthropic: countTokens', async () => {
        const c = await an.messages.countTokens({ model: 'm.gguf', system: msgReq.system, messages: msgReq.messages });
        check('anthropic: messages.countTokens counts the prompt', c.input_tokens > 0, c);
    });
    await step('anthropic: a bad request', async () => {
        let status = null;
        try {
            await an.messages.create({ ...msgReq, max_tokens: 0 });
        } catch (e) {
            status = e.status;
        }
        check('anthropic: a bad request raises a 400 error', status === 400, status);
    });
    console.log('client-finished');
})();
