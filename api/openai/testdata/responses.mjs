// Drives a Trellis server's /v1/responses with the real openai client
// and prints one JSON report: what each scenario saw. The Go test
// (responses_test.go) judges it.
// Usage: node responses.mjs <baseURL> <apiKey>, or, for one whole and
// one streamed response only, node responses.mjs <baseURL> <apiKey> one
// <model>.
import OpenAI from 'openai';
import { report, scenario } from './report.mjs';

const [baseURL, apiKey, only, onlyModel] = process.argv.slice(2);
// No retries: a 5xx must show, not be retried away.
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 20000 });
const model = onlyModel ?? 'trellis-test';

// streamed reads a responses.stream: the event types in order, the
// text deltas, and the final response.
async function streamed(params) {
  const stream = client.responses.stream(params);
  const types = [];
  let text = '';
  let reasoning = '';
  stream.on('event', (e) => types.push(e.type));
  stream.on('response.output_text.delta', (e) => { text += e.delta; });
  stream.on('response.reasoning_text.delta', (e) => { reasoning += e.delta; });
  const final = await stream.finalResponse();
  return { types, text, reasoning, final };
}

await scenario('create', async () => {
  const { data, response } = await client.responses.create({ model, input: 'hello there', instructions: 'Be brief.' }).withResponse();
  return { response: data, outputText: data.output_text, conversation: response.headers.get('x-trellis-conversation-id') };
});

await scenario('stream', async () => streamed({ model, input: 'hello again' }));

if (only === 'one') {
  process.stdout.write(JSON.stringify(report));
  process.exit(0);
}

await scenario('continue', async () => {
  const next = await client.responses.create({
    model, previous_response_id: report.create.response.id,
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'what is 2+2?' }] }],
  });
  return { response: next, outputText: next.output_text };
});

await scenario('reasoning', async () => streamed({ model, input: 'please think it over' }));

// The function round trip: the response ends with a function_call; the
// client runs it and sends its output with previous_response_id.
const tools = [{
  type: 'function', name: 'get_weather', description: 'The weather in a city.', strict: false,
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}];

async function roundTrip(stream) {
  const ask = { model, input: 'what is the weather in Oslo?', tools };
  const first = stream ? (await streamed(ask)).final : await client.responses.create(ask);
  const calls = first.output.filter((it) => it.type === 'function_call');
  const outputs = calls.map((c) => {
    const { city } = JSON.parse(c.arguments);
    return { type: 'function_call_output', call_id: c.call_id, output: `sunny in ${city}` };
  });
  const follow = { model, previous_response_id: first.id, input: outputs, tools };
  const second = stream ? await streamed(follow) : { final: await client.responses.create(follow) };
  return { first, second: second.final, types: second.types ?? null, outputText: second.final.output_text };
}

await scenario('functionCall', async () => roundTrip(false));
await scenario('functionCallStream', async () => roundTrip(true));

// An approval: the response shows the request; retrieve reads the
// response again, cancel ends it without running the tool.
await scenario('approval', async () => {
  const r = await client.responses.create({ model, input: 'please delete /tmp/a.txt' });
  const retrieved = await client.responses.retrieve(r.id);
  const cancelled = await client.responses.cancel(r.id);
  return { response: r, retrieved, cancelled };
});

await scenario('approvalStream', async () => streamed({ model, input: 'please delete /tmp/b.txt' }));

for (const [name, body] of Object.entries({
  noInput: { model },
  badItem: { model, input: [{ type: 'web_search_call', id: 'ws_1', status: 'completed' }] },
  unknownModel: { model: 'no-such-model', input: 'hi' },
  unknownPrevious: { model, input: 'hi', previous_response_id: 'resp_nope' },
})) {
  await scenario(name, async () => {
    await client.responses.create(body);
    return { thrown: null };
  });
}

await scenario('streamError', async () => {
  await streamed({ model, input: [{ role: 'wizard', content: 'hi' }] });
  return { thrown: null };
});

process.stdout.write(JSON.stringify(report));
