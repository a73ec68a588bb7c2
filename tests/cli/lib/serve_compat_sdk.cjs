// serve_compat_sdk.cjs - the front-end fields of tests/cli/serve_compat.sh
// through the official client libraries (the `openai` and `@anthropic-ai/sdk`
// npm packages): what they send for those fields is accepted, and a refused
// field comes back as the library's own error class with the server's status
// and message.
//
// Usage: NODE_PATH=DIR/node_modules node serve_compat_sdk.cjs PORT N_CTX
// Prints "ok NAME" / "FAIL NAME: why" lines and "client-finished" at its end.
'use strict';
const OpenAI = require('openai');
const AnthropicMod = require('@anthropic-ai/sdk');
const Anthropic = AnthropicMod.Anthropic || AnthropicMod.default || AnthropicMod;
const { check, step, failure } = require('./sdk_check.cjs');

const [port, nCtxStr] = process.argv.slice(2);
const nCtx = Number(nCtxStr);

(async () => {
    const oa = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'sk-none', maxRetries: 0 });
    const base = { model: 'm.gguf', max_tokens: 4, temperature: 0, messages: [{ role: 'user', content: 'Say hello.' }] };
    let ref = null;
    await step('openai sdk: reference answer', async () => {
        const r = await oa.chat.completions.create(base);
        ref = r.choices[0].message.content;
        check('openai sdk: a plain chat', typeof ref === 'string', r);
    });
    await step('openai sdk: the fields front-ends add', async () => {
        const r = await oa.chat.completions.create({
            ...base, user: 'u1', parallel_tool_calls: false, logit_bias: {}, n: 1, seed: 7,
            response_format: { type: 'text' }, store: false, metadata: { a: 'b' },
            reasoning_effort: 'minimal', stop: ['\n\n\n\n'],
            tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }],
            tool_choice: 'none',
        });
        check('openai sdk: user, parallel_tool_calls, logit_bias {}, n 1, response_format text, store, metadata, ' +
              'reasoning_effort minimal, tool_choice none: the same answer',
              r.choices[0].message.content === ref && r.choices[0].finish_reason !== null, [r, ref]);
    });
    await step('openai sdk: stream with stream_options', async () => {
        const s = await oa.chat.completions.create({ ...base, stream: true, stream_options: { include_usage: true },
                                                     messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello.' }] }] });
        let text = '', usage = null;
        for await (const c of s) {
            if (c.choices.length) text += c.choices[0].delta.content || '';
            if (c.usage) usage = c.usage;
        }
        check('openai sdk: streamed text parts give the same answer and the usage', text === ref && usage !== null, [text, ref, usage]);
    });
    await step('openai sdk: models.retrieve', async () => {
        const m = await oa.models.retrieve('m.gguf');
        check('openai sdk: models.retrieve(id) gives the model', m.id === 'm.gguf' && m.object === 'model', m);
        const [st, , cls] = await failure(oa.models.retrieve('gpt-4o'));
        check('openai sdk: models.retrieve(unknown) raises NotFoundError', st === 404 && cls === 'NotFoundError', [st, cls]);
    });
    const refused = [
        ['n 2', { n: 2 }, /one choice/],
        ['response_format json_object', { response_format: { type: 'json_object' } }, /response_format/],
        ['a non-empty logit_bias', { logit_bias: { 42: -100 } }, /logit_bias/],
        ['max_tokens beyond the context', { max_tokens: nCtx * 4 }, new RegExp(String(nCtx * 4))],
        ['an image part', { messages: [{ role: 'user', content: [{ type: 'text', text: 'What?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }] }, /text only/],
    ];
    for (const [name, extra, re] of refused) {
        await step('openai sdk: ' + name, async () => {
            const [st, msg, cls] = await failure(oa.chat.completions.create({ ...base, ...extra }));
            check('openai sdk: ' + name + ' raises BadRequestError (400) with the server\'s message',
                  st === 400 && cls === 'BadRequestError' && re.test(msg), [st, msg, cls]);
        });
    }

    const an = new Anthropic({ baseURL: `http://127.0.0.1:${port}`, apiKey: 'none', maxRetries: 0 });
    const claude = {
        model: 'claude-sonnet-4-5', max_tokens: 4, temperature: 0,
        system: [{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello.', cache_control: { type: 'ephemeral' } }] }],
        metadata: { user_id: 'u1' },
        tools: [{ name: 'Bash', description: 'Run a command',
                  input_schema: { type: 'object', properties: { command: { type: 'string' } } } }],
        tool_choice: { type: 'auto' },
    };
    await step('anthropic sdk: Claude Code\'s fields', async () => {
        const m = await an.messages.create(claude);
        check('anthropic sdk: system blocks with cache_control, metadata, tools, tool_choice auto: a message',
              m.type === 'message' && ['end_turn', 'max_tokens', 'tool_use'].includes(m.stop_reason), m);
    });
    await step('anthropic sdk: stream', async () => {
        const s = an.messages.stream({ ...claude, thinking: { type: 'enabled', budget_tokens: 1024 } });
        const final = await s.finalMessage();
        check('anthropic sdk: a streamed request with thinking: the final message has a stop_reason',
              final.type === 'message' && final.stop_reason !== null, final);
    });
    await step('anthropic sdk: models.list', async () => {
        const page = await an.models.list();
        check('anthropic sdk: models.list names the model', page.data.length === 1 && page.data[0].id === 'm.gguf' &&
              page.data[0].type === 'model', page.data);
    });
    await step('anthropic sdk: refused', async () => {
        const [st, msg, cls] = await failure(an.messages.create({ ...claude, max_tokens: nCtx * 4 }));
        check('anthropic sdk: max_tokens beyond the context raises BadRequestError with the numbers',
              st === 400 && cls === 'BadRequestError' && msg.includes(String(nCtx * 4)) && msg.includes(String(nCtx)),
              [st, msg, cls]);
        const [st2, msg2, cls2] = await failure(an.messages.create({ ...claude, messages: [{ role: 'user', content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }] }));
        check('anthropic sdk: an image block raises BadRequestError saying text only',
              st2 === 400 && cls2 === 'BadRequestError' && /text only/.test(msg2), [st2, msg2, cls2]);
    });
    console.log('client-finished');
})();
