// Package server serves structgen's engine over HTTP with the APIs that
// existing clients speak: OpenAI's (the official openai-go client,
// LangChain, curl scripts) and Ollama's (github.com/ollama/ollama/api). It
// is a thin layer: it decodes and checks requests, maps them to engine
// options, streams, and maps errors to each API's status and error shape;
// sampling, grammars and the model are the engine's.
//
// # Endpoints
//
//	POST /v1/chat/completions  messages rendered with the model's chat format; response_format
//	                           text | json_object | json_schema; tools with tool_choice auto |
//	                           required | none | a named function, answered as tool_calls; stream
//	                           (SSE, stream_options.include_usage); max_tokens,
//	                           max_completion_tokens, temperature, top_p, seed, stop, n,
//	                           presence/frequency_penalty; reasoning_effort
//	POST /v1/completions       prompt in, text out (the same sampling and constraints)
//	GET  /v1/models            the served model
//	POST /api/chat             Ollama: messages, format ("json" or a schema), tools, options,
//	                           think, NDJSON stream (the default) or stream: false
//	POST /api/generate         Ollama: prompt (with system, or raw), format, options, think
//	GET  /api/tags, POST /api/show, GET /api/version
//	GET  /health               200 {"status":"ok"} once the model is loaded; 503 loading|draining
//	GET  /metrics              Prometheus
//
// Extensions on the OpenAI endpoints (and /api/*): "grammar" (GBNF text,
// instead of response_format), "lenient" (schema keywords a grammar cannot
// enforce are relaxed, with structgen_warnings in the response, instead of
// a 400), "whitespace" ("compact", the default, or "flexible"),
// "reasoning_budget" (thinking tokens: -1 unlimited, 0 off), and the llama.cpp
// server's sampling fields top_k, min_p, typical_p, repeat_penalty,
// repeat_last_n. A response's "reasoning_content" holds a reasoning model's
// thinking (Ollama: message.thinking).
//
// # Semantics
//
//   - A schema or grammar constrains the whole answer (after a reasoning
//     model's thinking, which is free). A token budget closes a constrained
//     answer out validly: finish_reason is then "stop"; "length" means text
//     without a grammar was cut. Tool calls give finish_reason
//     "tool_calls" and content null unless the model wrote text before them.
//   - Streamed chunks concatenate to the non-streamed response of the same
//     seed (text that could still become a stop string or a tool-call marker
//     is held back until decided; tool calls come whole at the end).
//   - seed is reduced to the engine's 32 bits; a seeded request run alone
//     gives the same output every time (see the engine's Determinism).
//   - The request's model name is not checked: one server serves one model,
//     and every response names it.
//
// # Errors and limits
//
// Errors are OpenAI's {"error": {"message", "type", "param", "code"}}
// (Ollama's endpoints: {"error": "..."}): malformed JSON 400 with its byte
// offset; an unsupported schema keyword 400 naming the keyword and its JSON
// pointer (param: the field holding the schema); a grammar error 400 with
// line:col; a schema, grammar or tool set over the size or compile limits
// 400; a prompt beyond the context 400 (context_length_exceeded); a full
// queue 429 with Retry-After; a missing or wrong API key 401; a body over
// MaxBodyBytes 413; a model failure 500. Request bodies, schemas and
// grammars (MaxGrammarBytes), messages (engine.MaxMessages), tools
// (engine.MaxTools), stop strings, max_tokens and compile time
// (engine.WithCompileTimeout) are bounded. A compile stops when every
// request waiting for it is gone or its time limit passes. A panic in a
// request is recovered, logged and answered with 500. A client that
// disconnects frees its sequence within one decode step.
//
// # Operations
//
// One log line per request (log/slog) with its request id (the client's
// X-Request-Id or a new one, echoed in the response), status, duration,
// tokens and time to first token. Metrics: structgen_requests_total
// {endpoint,status}, structgen_request_duration_seconds,
// structgen_queue_depth, structgen_active_sequences,
// structgen_time_to_first_token_seconds,
// structgen_inter_token_latency_seconds, structgen_prompt_tokens_total,
// structgen_completion_tokens_total, structgen_mask_seconds_total,
// structgen_mask_seconds_per_token, structgen_decode_steps_total,
// structgen_decode_seconds_total, structgen_step_grammar_seconds_total,
// structgen_step_mask_wait_seconds_total,
// structgen_grammar_cache_{hits,misses,evictions}_total,
// structgen_grammar_cache_{bytes,entries}, and Go's and the process's.
// Serve drains on shutdown: /health turns 503, new requests get 503, running
// ones get a bounded time, then are cancelled.
//
// The server keeps no state between requests but the engine's grammar
// cache, so it scales by replicas behind any HTTP load balancer (deploy/).
//
// Concurrency: a Server is safe for concurrent use; requests run
// concurrently, batched by the engine.
package server
