// serve_scaleout_sdk.cjs - docs/server.md's client side of the scale-out
// recipe, for tests/cli/serve_scaleout.sh: the official `openai` client sets
// the conversation header through `defaultHeaders`, and nginx keeps each
// conversation on one node. Finds two conversation ids that nginx puts on
// different nodes (one client per conversation), then sends each its second
// turn through the same client: each lands where its first did (nginx's
// X-Sluice-Node) and reuses the prefix there (cached_tokens > 0).
// Usage: node serve_scaleout_sdk.cjs FRONT_PORT
'use strict';
const OpenAI = require('openai');
const { check, step } = require('./sdk_check.cjs');

const front = process.argv[2];
const SYSTEM = 'You keep the harbour log: every ship, its flag, its cargo and the tide. '.repeat(8);

async function turn(client, messages) {
    const { data, response } = await client.chat.completions
        .create({ model: 'any', messages, max_tokens: 4, temperature: 0, ignore_eos: true })
        .withResponse();
    const node = (response.headers.get('x-sluice-node') || '').split(',').pop().trim();
    return { data, node };
}

(async () => {
    await step('the openai client through nginx', async () => {
        const home = new Map(); // node -> {client, messages}
        for (let i = 0; i < 64 && home.size < 2; i++) {
            const client = new OpenAI({
                baseURL: `http://127.0.0.1:${front}/v1`, apiKey: 'unused', maxRetries: 0,
                defaultHeaders: { 'X-Session-Id': `sdk-conversation-${i}` },
            });
            const messages = [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'Which ships came in?' }];
            const { data, node } = await turn(client, messages);
            if (home.has(node)) continue;
            messages.push({ role: 'assistant', content: data.choices[0].message.content || '' });
            messages.push({ role: 'user', content: 'And the tide?' });
            home.set(node, { client, messages });
        }
        check(`openai client: defaultHeaders put two conversations on two nodes (${[...home.keys()]})`,
              home.size === 2, [...home.keys()]);
        for (const [node, conv] of home) {
            const { data, node: again } = await turn(conv.client, conv.messages);
            const cached = data.usage.prompt_tokens_details.cached_tokens;
            check(`openai client: the second turn stays on ${node} (${again}) and reuses its prefix ` +
                  `(cached_tokens ${cached})`, again === node && cached > 0, { again, cached });
        }
    });
    console.log('client-finished');
})();
