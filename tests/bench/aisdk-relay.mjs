// The Vercel AI SDK 6 relay as an app would write it, for the lmchatkit bench:
// POST /api/chat {model, messages} -> streamText() against an OpenAI-compatible upstream
// -> toUIMessageStreamResponse() (the UI message stream, SSE), piped to Node's http server.
// UPSTREAM_BASE_URL is the upstream's /v1 URL; PORT the port (0: any); prints "LISTEN addr".
import http from 'node:http';
import { Readable } from 'node:stream';
import { streamText } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';

const upstream = createOpenAICompatible({
  name: 'mock',
  baseURL: process.env.UPSTREAM_BASE_URL,
  apiKey: 'sk-bench',
});

const server = http.createServer(async (req, res) => {
  if (req.method !== 'POST' || req.url !== '/api/chat') return res.writeHead(404).end();
  let body = '';
  for await (const chunk of req) body += chunk;
  const { model, messages } = JSON.parse(body);
  const result = streamText({ model: upstream(model), messages });
  const response = result.toUIMessageStreamResponse();
  res.writeHead(response.status, Object.fromEntries(response.headers));
  Readable.fromWeb(response.body).pipe(res);
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`LISTEN 127.0.0.1:${server.address().port}`);
});
