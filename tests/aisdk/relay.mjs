// The AI SDK's own server side, as an AI SDK app writes it: POST /api/chat {model, messages: UIMessage[]}
// -> convertToModelMessages -> streamText() against an OpenAI-compatible upstream ->
// toUIMessageStreamResponse(), with one tool, get_weather {city}, that needs approval (the AI SDK runs
// it on the re-post after an approval, with the input the client sent back). GET
// /api/chat/{id}/stream answers 204 (nothing to resume). The
// reference the driver (drive.mjs) is checked against, so the harness is known to work before it
// meets lmchatkit's endpoint.
//
// Env: UPSTREAM_BASE_URL (the upstream's /v1 URL), AI_VERSION (default 6.0.326), PORT (0: any).
// Prints "LISTEN 127.0.0.1:port" once listening.
import http from 'node:http';
import { Readable } from 'node:stream';
import { importAi, importPackage } from './load.mjs';

const { streamText, convertToModelMessages, tool, jsonSchema, stepCountIs } = await importAi(
  process.env.AI_VERSION ?? '6.0.326',
);
const { createOpenAICompatible } = await importPackage('@ai-sdk/openai-compatible');

const upstream = createOpenAICompatible({
  name: 'mock',
  baseURL: process.env.UPSTREAM_BASE_URL,
  apiKey: 'sk-test',
});

const tools = {
  get_weather: tool({
    description: 'The weather in a city',
    inputSchema: jsonSchema({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
    needsApproval: true,
    execute: async ({ city }) => ({ city, forecast: 'sunny' }),
  }),
};

const server = http.createServer(async (req, res) => {
  if (req.method === 'GET' && /^\/api\/chat\/[^/]+\/stream$/.test(req.url)) return res.writeHead(204).end();
  if (req.method !== 'POST' || req.url !== '/api/chat') return res.writeHead(404).end();
  let body = '';
  for await (const chunk of req) body += chunk;
  const { model, messages } = JSON.parse(body);
  const result = streamText({
    model: upstream(model),
    messages: await convertToModelMessages(messages),
    tools,
    stopWhen: stepCountIs(5),
  });
  const response = result.toUIMessageStreamResponse({ originalMessages: messages });
  res.writeHead(response.status, Object.fromEntries(response.headers));
  Readable.fromWeb(response.body).pipe(res);
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`LISTEN 127.0.0.1:${server.address().port}`);
});
