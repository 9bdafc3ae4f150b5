// Drives a Trellis server with the real openai client and prints one JSON
// report: what each scenario saw. The Go test (openai_test.go) judges it.
// Usage: node client.mjs <baseURL> <apiKey>, or, for one completion
// of one message and model only, node client.mjs <baseURL> <apiKey>
// one <message> <model>.
import OpenAI from 'openai';
import { report, scenario } from './report.mjs';

const [baseURL, apiKey, only, message, onlyModel] = process.argv.slice(2);
// No retries: a 5xx must show, not be retried away.
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 20000 });
const model = 'trellis-test';

if (only === 'one') {
  const { data, response } = await client.chat.completions
    .create({ model: onlyModel, messages: [{ role: 'user', content: message }] }).withResponse();
  process.stdout.write(JSON.stringify({ completion: data, conversation: response.headers.get('x-trellis-conversation-id') }));
  process.exit(0);
}

const user = (content) => [{ role: 'system', content: 'Be brief.' }, { role: 'user', content }];

await scenario('models', async () => {
  const page = await client.models.list();
  const ids = [];
  for await (const m of page) ids.push(m.id);
  const one = await client.models.retrieve('trellis-test');
  let missing = null;
  try { await client.models.retrieve('nope'); } catch (err) { missing = err.status; }
  return { ids, one: one.id, missing };
});

await scenario('create', async () => {
  const { data, response } = await client.chat.completions.create({ model, messages: user('hello there') }).withResponse();
  return { completion: data, conversation: response.headers.get('x-trellis-conversation-id') };
});

await scenario('createStream', async () => {
  const stream = await client.chat.completions.create({ model, messages: user('what is 2+2?'), stream: true, stream_options: { include_usage: true } });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  return { chunks };
});

await scenario('stream', async () => {
  const stream = client.chat.completions.stream({ model, messages: user('hello again'), stream_options: { include_usage: true } });
  let text = '';
  stream.on('content', (delta) => { text += delta; });
  const final = await stream.finalChatCompletion();
  return { text, final };
});

// A thinking model: reasoning_content, whole and streamed (every piece
// in a delta that carries nothing else).
await scenario('reasoning', async () => {
  const completion = await client.chat.completions.create({ model, messages: user('please think it over') });
  return { completion };
});

await scenario('reasoningStream', async () => {
  const stream = await client.chat.completions.create({ model, messages: user('please think it over'), stream: true });
  const reasoning = [];
  let text = '';
  for await (const c of stream) {
    for (const ch of c.choices) {
      if (ch.delta.reasoning_content !== undefined) {
        if (ch.delta.content !== undefined) throw new Error('a reasoning delta carries content too');
        reasoning.push(ch.delta.reasoning_content);
      }
      text += ch.delta.content ?? '';
    }
  }
  return { reasoning, text };
});

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    parse: JSON.parse,
    function: async ({ city }) => { report.toolRan = city; return `sunny in ${city}`; },
  },
};

await scenario('runTools', async () => {
  const runner = client.chat.completions.runTools({ model, messages: user('what is the weather in Oslo?'), tools: [weatherTool] });
  const content = await runner.finalContent();
  return { content, messages: runner.messages };
});

await scenario('runToolsStream', async () => {
  const runner = client.chat.completions.runTools({ model, messages: user('what is the weather in Oslo?'), tools: [weatherTool], stream: true });
  const content = await runner.finalContent();
  return { content, calls: runner.messages.filter((m) => m.tool_calls?.length).length };
});

await scenario('approval', async () => {
  const c = await client.chat.completions.create({ model, messages: user('please delete /tmp/a.txt') });
  return { completion: c };
});

await scenario('approvalStream', async () => {
  const stream = await client.chat.completions.create({ model, messages: user('please delete /tmp/b.txt'), stream: true });
  let text = '';
  let finish = null;
  for await (const c of stream) {
    text += c.choices[0]?.delta?.content ?? '';
    finish = c.choices[0]?.finish_reason ?? finish;
  }
  return { text, finish };
});

await scenario('abort', async () => {
  const ac = new AbortController();
  const { data: stream, response } = await client.chat.completions
    .create({ model, messages: user('answer slowly please'), stream: true }, { signal: ac.signal }).withResponse();
  let text = '';
  let ended = 'done';
  try {
    for await (const c of stream) {
      text += c.choices[0]?.delta?.content ?? '';
      if (text.length > 0) ac.abort();
    }
  } catch (err) {
    ended = err.constructor.name;
  }
  const t = Date.now();
  const next = await client.chat.completions.create({ model, messages: user('hello after the abort') });
  return { text, ended, conversation: response.headers.get('x-trellis-conversation-id'), next: next.choices[0].message.content, nextMs: Date.now() - t };
});

for (const [name, body] of Object.entries({
  noMessages: { model, messages: [] },
  badRole: { model, messages: [{ role: 'wizard', content: 'hi' }] },
  unknownModel: { model: 'no-such-model', messages: user('hi') },
  imagePart: { model, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://x/y.png' } }] }] },
})) {
  await scenario(name, async () => {
    await client.chat.completions.create(body);
    return { thrown: null };
  });
}

process.stdout.write(JSON.stringify(report));
