package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/sampling/cpu"
)

// In this package s is always the *Server, w the http.ResponseWriter, r
// the *http.Request and e an *apiError.

// Limits and defaults of requests (Config; the serve command's flags).
const (
	// DefaultMaxBodyBytes bounds a request body: a 128-tool request with
	// realistic schemas is about 200 KB and a long conversation a few MB;
	// larger bodies are refused (413) while they are read, before any of
	// them is decoded.
	DefaultMaxBodyBytes = 8 << 20
	// DefaultMaxGrammarBytes bounds a schema (response_format, Ollama's
	// format), a grammar (the grammar extension) and the tools' schemas
	// together, in bytes of their JSON or GBNF text: conversion and
	// compilation cost grows with them (the largest JSONSchemaBench schema,
	// 0.5 MB, converts and compiles in about 2 s).
	DefaultMaxGrammarBytes = 1 << 20
	// DefaultRetryAfter is what a 429 (queue full) tells clients to wait.
	DefaultRetryAfter = time.Second
	// DefaultDrainTimeout bounds a graceful shutdown: running requests get
	// this long to finish, then they are cancelled (each frees its sequence
	// within a decode step).
	DefaultDrainTimeout = 30 * time.Second
)

// Config configures a Server. Zero values mean the defaults.
type Config struct {
	// ModelName is the model's id in /v1/models and /api/tags, and the
	// model of every response (requests may name any model: one server
	// serves one).
	ModelName string
	// APIKey, if set, is required as "Authorization: Bearer KEY" on the
	// API endpoints (not on /health and /metrics).
	APIKey string
	// MaxBodyBytes bounds request bodies (DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// MaxGrammarBytes bounds schemas, grammars and tool schemas
	// (DefaultMaxGrammarBytes).
	MaxGrammarBytes int
	// MaxTokens bounds max_tokens and num_predict (0: the model's
	// context, which bounds them anyway).
	MaxTokens int
	// Sampling is the default sampler (cpu.LlamaDefaults() when zero);
	// requests override temperature, top_p, top_k, min_p, seed and the
	// penalties.
	Sampling *cpu.Params
	// ReasoningBudget is the default thinking budget of reasoning models
	// in tokens (0: unlimited); NoReasoning turns thinking off by default.
	// Requests override both (reasoning_budget, reasoning_effort, think).
	ReasoningBudget int
	NoReasoning     bool
	// RetryAfter is the Retry-After of a 429 (DefaultRetryAfter).
	RetryAfter time.Duration
	// Logger gets one line per request (slog.Default() when nil).
	Logger *slog.Logger
	// Created is the model's creation time reported by /v1/models (the
	// server's start when zero).
	Created time.Time
}

// Server serves the OpenAI and Ollama APIs over an engine. It is an
// http.Handler; it keeps no state between requests but the engine's
// grammar cache. Until SetEngine is called (the model is loading), /health
// and every API endpoint answer 503.
type Server struct {
	cfg      Config
	log      *slog.Logger
	eng      atomic.Pointer[engine.Engine]
	draining atomic.Bool
	mux      *http.ServeMux
	reg      *prometheus.Registry
	met      *metrics
	sampling cpu.Params
}

// New returns a server without an engine (SetEngine makes it ready).
func New(cfg Config) (*Server, error) {
	if cfg.ModelName == "" {
		cfg.ModelName = "structgen"
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxGrammarBytes <= 0 {
		cfg.MaxGrammarBytes = DefaultMaxGrammarBytes
	}
	if cfg.MaxTokens < 0 || cfg.MaxTokens > engine.MaxTokensLimit {
		return nil, fmt.Errorf("server: MaxTokens %d out of range [0, %d]", cfg.MaxTokens, engine.MaxTokensLimit)
	}
	if cfg.ReasoningBudget < 0 || cfg.ReasoningBudget > engine.MaxTokensLimit {
		return nil, fmt.Errorf("server: ReasoningBudget %d out of range [0, %d]", cfg.ReasoningBudget, engine.MaxTokensLimit)
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = DefaultRetryAfter
	}
	if cfg.Created.IsZero() {
		cfg.Created = time.Now()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), reg: prometheus.NewRegistry(), sampling: cpu.LlamaDefaults()}
	if s.log == nil {
		s.log = slog.Default()
	}
	if cfg.Sampling != nil {
		if _, err := cpu.NewChain(*cfg.Sampling); err != nil {
			return nil, fmt.Errorf("server: sampling: %w", err)
		}
		s.sampling = *cfg.Sampling
	}
	s.met = newMetrics(s.reg, s.engine)
	s.routes()
	return s, nil
}

// SetEngine makes the server ready: the model is loaded.
func (s *Server) SetEngine(e *engine.Engine) { s.eng.Store(e) }

func (s *Server) engine() *engine.Engine { return s.eng.Load() }

// Drain stops admitting requests: /health answers 503 so that load
// balancers stop sending, and new API requests get 503; running requests
// go on.
func (s *Server) Drain() { s.draining.Store(true) }

// Registry is the server's Prometheus registry (served on /metrics).
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// ServeHTTP serves a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) routes() {
	api := func(pattern string, h func(http.ResponseWriter, *http.Request, *reqInfo) error, shape errShape) {
		s.mux.Handle(pattern, s.wrap(pattern, h, shape, true))
	}
	open := func(pattern string, h func(http.ResponseWriter, *http.Request, *reqInfo) error, shape errShape) {
		s.mux.Handle(pattern, s.wrap(pattern, h, shape, false))
	}
	api("POST /v1/chat/completions", s.chatCompletions, shapeOpenAI)
	api("POST /v1/completions", s.completions, shapeOpenAI)
	api("GET /v1/models", s.models, shapeOpenAI)
	api("GET /v1/models/{id}", s.model, shapeOpenAI)
	api("POST /api/chat", s.ollamaChat, shapeOllama)
	api("POST /api/generate", s.ollamaGenerate, shapeOllama)
	api("GET /api/tags", s.ollamaTags, shapeOllama)
	api("POST /api/show", s.ollamaShow, shapeOllama)
	open("GET /api/version", s.ollamaVersion, shapeOllama)
	open("GET /health", s.health, shapeOpenAI)
	open("GET /{$}", s.health, shapeOpenAI)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg}))
	open("/", func(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
		return &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path), typ: "invalid_request_error", code: "not_found"}
	}, shapeOpenAI)
}

// reqInfo is what a request's log line and metrics report; handlers fill
// it in.
type reqInfo struct {
	id               string
	promptTokens     int
	completionTokens int
	ttft             time.Duration
	stop             string
	streamed         bool
}

// wrap adds what every endpoint has: a request id, the body limit, the
// API key, readiness, panic recovery, the error shape, one log line and
// the request metrics.
func (s *Server) wrap(endpoint string, h func(http.ResponseWriter, *http.Request, *reqInfo) error, shape errShape, api bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &reqInfo{id: requestID(r)}
		w.Header().Set("X-Request-Id", info.id)
		sw := &statusWriter{ResponseWriter: w}
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					s.log.Error("panic", "request_id", info.id, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
					err = &apiError{status: http.StatusInternalServerError, msg: "internal error (the server recovered; see its log, request " + info.id + ")", typ: "server_error", code: "internal_error"}
				}
			}()
			if api {
				if err = s.admit(r); err != nil {
					return
				}
			}
			r.Body = http.MaxBytesReader(sw, r.Body, s.cfg.MaxBodyBytes)
			err = h(sw, r, info)
		}()
		if err != nil {
			err = toAPIError(err)
			if !sw.wrote {
				writeError(sw, err.(*apiError), shape, s.cfg.RetryAfter)
			} else if !errors.Is(err, context.Canceled) {
				writeStreamError(sw, err.(*apiError), shape)
			}
		}
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		if err != nil && r.Context().Err() != nil {
			status = statusClientClosed // the client went away (mid-stream too)
		}
		d := time.Since(start)
		s.met.request(endpoint, status, d)
		attrs := []any{"request_id", info.id, "method", r.Method, "path", r.URL.Path, "status", status,
			"duration_ms", float64(d.Microseconds()) / 1000, "remote", r.RemoteAddr}
		if info.promptTokens > 0 || info.completionTokens > 0 {
			attrs = append(attrs, "prompt_tokens", info.promptTokens, "completion_tokens", info.completionTokens,
				"ttft_ms", float64(info.ttft.Microseconds())/1000, "stop", info.stop, "stream", info.streamed)
		}
		level := slog.LevelInfo
		if !api && status == http.StatusOK {
			level = slog.LevelDebug // health probes, every few seconds
		}
		if err != nil {
			attrs = append(attrs, "error", err.Error())
			if status >= 500 {
				level = slog.LevelError
			}
		}
		s.log.Log(context.Background(), level, "request", attrs...)
	})
}

// statusClientClosed is what the log and metrics record for a request
// whose client went away (nginx's convention).
const statusClientClosed = 499

// admit checks the API key and readiness.
func (s *Server) admit(r *http.Request) error {
	if s.cfg.APIKey != "" {
		key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(key)), []byte(s.cfg.APIKey)) != 1 {
			msg := "missing API key: send Authorization: Bearer KEY"
			if ok {
				msg = "wrong API key"
			}
			return &apiError{status: http.StatusUnauthorized, msg: msg, typ: "invalid_request_error", code: "invalid_api_key"}
		}
	}
	switch {
	case s.draining.Load():
		return &apiError{status: http.StatusServiceUnavailable, msg: "the server is shutting down", typ: "server_error", code: "shutting_down"}
	case s.engine() == nil:
		return &apiError{status: http.StatusServiceUnavailable, msg: "the model is loading", typ: "server_error", code: "model_loading"}
	}
	return nil
}

// requestID is the client's X-Request-Id (if sane) or a new random id.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 128 && !strings.ContainsFunc(id, func(c rune) bool { return c < ' ' || c > '~' }) {
		return id
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusWriter records the status and whether anything was written.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) health(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	status, code := "ok", http.StatusOK
	switch {
	case s.draining.Load():
		status, code = "draining", http.StatusServiceUnavailable
	case s.engine() == nil:
		status, code = "loading", http.StatusServiceUnavailable
	}
	return writeJSON(w, code, map[string]string{"status": status})
}

// Serve serves on ln until ctx ends, then shuts down gracefully: it stops
// admitting (Drain), waits up to drain for running requests, then cancels
// those left (each frees its model sequence within a decode step) and
// closes.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	if drain <= 0 {
		drain = DefaultDrainTimeout
	}
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.Drain()
	s.log.Info("draining", "timeout", drain.String())
	sctx, scancel := context.WithTimeout(context.Background(), drain)
	defer scancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		s.log.Warn("drain timeout: cancelling the requests left", "error", err)
		cancel()
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		if err := hs.Shutdown(cctx); err != nil {
			hs.Close()
		}
	}
	<-errc
	return nil
}

// retryAfter formats a Retry-After header (whole seconds, at least 1).
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
}
