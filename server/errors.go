package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"time"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// apiError is an error with its HTTP status and OpenAI's error fields:
// {"error": {"message", "type", "param", "code"}}. Ollama's endpoints
// write {"error": message}.
type apiError struct {
	status int
	msg    string
	typ    string // invalid_request_error, rate_limit_error, server_error
	param  string // the request field at fault, if any
	code   string
	err    error // the cause, if any
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.err }

// badRequest is a 400 about param.
func badRequest(param, code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...), typ: "invalid_request_error", param: param, code: code}
}

// errShape is the error format of an API.
type errShape int

const (
	shapeOpenAI errShape = iota
	shapeOllama
)

// toAPIError maps an error of decoding, conversion, compilation or
// generation to its status and error fields (errors.As on the typed errors
// of the packages below). The param of an error raised while a request
// field was handled is set by the caller (see inParam).
func toAPIError(err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	msg := err.Error()
	var (
		mbe  *http.MaxBytesError
		unsp *jsonschema2gbnf.UnsupportedError
		inv  *jsonschema2gbnf.InvalidSchemaError
		lim  *jsonschema2gbnf.LimitError
		rem  *jsonschema2gbnf.RemoteRefError
		uns  *jsonschema2gbnf.UnsatisfiableError
		gerr *gbnf.Error
		merr *mask.Error
		oe   *engine.OptionError
		tse  *engine.ToolSchemaError
	)
	bad := func(code string) error {
		return &apiError{status: http.StatusBadRequest, msg: msg, typ: "invalid_request_error", code: code, err: err}
	}
	switch {
	case errors.As(err, &mbe):
		return &apiError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body larger than %d bytes", mbe.Limit), typ: "invalid_request_error", code: "request_too_large", err: err}
	case errors.Is(err, engine.ErrQueueFull):
		return &apiError{status: http.StatusTooManyRequests, msg: "the server is at capacity (every sequence busy and the queue full): retry later", typ: "rate_limit_error", code: "queue_full", err: err}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: statusClientClosed, msg: "request cancelled: " + msg, typ: "invalid_request_error", code: "cancelled", err: err}
	case errors.As(err, &tse):
		ae := bad("unsupported_schema").(*apiError)
		ae.param = fmt.Sprintf("tools[%d].function.parameters", tse.Index)
		return ae
	case errors.As(err, &unsp):
		return bad("unsupported_schema")
	case errors.As(err, &inv), errors.As(err, &rem), errors.As(err, &uns):
		return bad("invalid_schema")
	case errors.As(err, &lim):
		return bad("schema_too_large")
	case errors.As(err, &gerr):
		return bad("invalid_grammar")
	case errors.Is(err, engine.ErrCompileTimeout):
		return bad("compile_timeout")
	case errors.As(err, &merr):
		return bad("grammar_too_large")
	case errors.Is(err, engine.ErrContextFull):
		return bad("context_length_exceeded")
	case errors.Is(err, engine.ErrBudget):
		return bad("max_tokens_too_small")
	case errors.Is(err, engine.ErrUnknownChatTemplate), errors.Is(err, engine.ErrNoChatTemplate):
		return bad("unsupported_chat_template")
	case errors.As(err, &oe):
		return bad("invalid_value")
	}
	return &apiError{status: http.StatusInternalServerError, msg: "model failure: " + msg, typ: "server_error", code: "model_error", err: err}
}

// inParam sets the param of a request error that has none: the field
// whose content caused it (a schema, a grammar).
func inParam(err error, param string) error {
	ae, ok := toAPIError(err).(*apiError)
	if ok && ae.param == "" && ae.status == http.StatusBadRequest {
		ae.param = param
	}
	return ae
}

// decodeError maps a JSON decoding error of a request body to a 400 with
// the byte offset.
func decodeError(err error) error {
	var (
		se  *json.SyntaxError
		ute *json.UnmarshalTypeError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.As(err, &se):
		return badRequest("", "invalid_json", "invalid JSON at byte offset %d: %v", se.Offset, se)
	case errors.As(err, &ute):
		field := ute.Field
		if field == "" {
			field = "(the body)"
		}
		return badRequest(ute.Field, "invalid_type", "invalid JSON at byte offset %d: %s must be %s, not %s", ute.Offset, field, jsonType(ute.Type), ute.Value)
	case errors.Is(err, io.EOF):
		return badRequest("", "invalid_json", "empty request body: want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "invalid_json", "invalid JSON: the body ends in the middle of a value")
	}
	return badRequest("", "invalid_json", "invalid JSON: %v", err)
}

// jsonType names the JSON type a Go type decodes from.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a JSON value"
		}
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Pointer:
		return jsonType(t.Elem())
	}
	return t.String()
}

// decodeBody decodes the request body into v: one JSON value, nothing
// after it.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	var rest json.RawMessage
	if err := dec.Decode(&rest); err != io.EOF {
		if err == nil {
			return badRequest("", "invalid_json", "invalid JSON at byte offset %d: data after the request object", dec.InputOffset()-int64(len(rest)))
		}
		return decodeError(err)
	}
	return nil
}

// writeError writes e in the API's shape.
func writeError(w http.ResponseWriter, e *apiError, shape errShape, retry time.Duration) {
	if e.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", retryAfter(retry))
	}
	if e.status == statusClientClosed {
		w.WriteHeader(e.status) // nobody reads it
		return
	}
	_ = writeJSON(w, e.status, errorBody(e, shape))
}

func errorBody(e *apiError, shape errShape) any {
	if shape == shapeOllama {
		return map[string]string{"error": e.msg}
	}
	type inner struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	in := inner{Message: e.msg, Type: e.typ}
	if e.param != "" {
		in.Param = &e.param
	}
	if e.code != "" {
		in.Code = &e.code
	}
	return map[string]inner{"error": in}
}

// writeStreamError ends a stream that has begun with the error: an SSE
// event with OpenAI's error object, or an NDJSON line {"error": …}.
func writeStreamError(w http.ResponseWriter, e *apiError, shape errShape) {
	b, _ := json.Marshal(errorBody(e, shape))
	if shape == shapeOllama {
		fmt.Fprintf(w, "%s\n", b)
	} else {
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	_ = http.NewResponseController(w).Flush()
}

// writeJSON writes v as the JSON body of a response.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(append(b, '\n'))
	return err
}
