//go:build llamacpp

package llamacpp

/*
#include "shim.h"
*/
import "C"

import (
	"io"
	"runtime/cgo"
	"strings"
	"sync"
	"unsafe"
)

// llama.cpp and ggml log through one process-wide callback. By default
// structgen keeps the log out of the user's terminal: it remembers the last
// warning and error lines (they explain a failed Load) and drops the rest.
// SetLogOutput sends the whole log somewhere.

// keptLogLines is how many warning/error lines are kept for error
// messages; a failed load logs two or three.
const keptLogLines = 8

// ggml_log_level values (ggml.h).
const (
	logLevelDebug = 1
	logLevelInfo  = 2
	logLevelWarn  = 3
	logLevelError = 4
	logLevelCont  = 5
)

var logState struct {
	mu      sync.Mutex
	out     io.Writer
	last    int             // level of the line being assembled (for CONT)
	partial strings.Builder // warning/error text not yet ended by '\n'
	lines   []logLine       // last keptLogLines complete warning/error lines
}

type logLine struct {
	level int
	text  string
}

func init() {
	C.structgen_log_install()
}

// SetLogOutput sends all of llama.cpp's log output (from informational up)
// to w; nil, the default, keeps only the warnings and errors that Load
// quotes in its errors. The log is process-wide.
func SetLogOutput(w io.Writer) {
	logState.mu.Lock()
	logState.out = w
	logState.mu.Unlock()
}

//export structgenLlamaLog
func structgenLlamaLog(level C.int, text *C.char) {
	s := C.GoString(text)
	logState.mu.Lock()
	defer logState.mu.Unlock()
	lv := int(level)
	if lv == logLevelCont {
		lv = logState.last
	} else {
		logState.last = lv
	}
	if logState.out != nil && lv >= logLevelInfo {
		io.WriteString(logState.out, s)
	}
	if lv < logLevelWarn {
		return
	}
	logState.partial.WriteString(s)
	for {
		p := logState.partial.String()
		i := strings.IndexByte(p, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(p[:i]); line != "" {
			if len(logState.lines) == keptLogLines {
				logState.lines = logState.lines[1:]
			}
			logState.lines = append(logState.lines, logLine{lv, line})
		}
		logState.partial.Reset()
		logState.partial.WriteString(p[i+1:])
	}
}

// takeLog returns the error lines logged since the last call (the
// warnings if there was no error; at most keptLogLines) joined by "; ",
// and forgets them.
func takeLog() string {
	logState.mu.Lock()
	defer logState.mu.Unlock()
	if rest := strings.TrimSpace(logState.partial.String()); rest != "" {
		logState.lines = append(logState.lines, logLine{logState.last, rest})
		logState.partial.Reset()
	}
	var errs, warns []string
	for _, l := range logState.lines {
		if l.level >= logLevelError {
			errs = append(errs, l.text)
		} else {
			warns = append(warns, l.text)
		}
	}
	logState.lines = logState.lines[:0]
	if len(errs) > 0 {
		return strings.Join(errs, "; ")
	}
	return strings.Join(warns, "; ")
}

// The load-progress callback target lives here too, beside the other
// //export.

//export structgenLlamaProgress
func structgenLlamaProgress(progress C.float, userData unsafe.Pointer) C.bool {
	h := (*progressHandle)(userData)
	return C.bool(h.h.Value().(func(float32) bool)(float32(progress)))
}

// progressHandle is what llama.cpp's progress_callback_user_data points
// to while a model loads: pinned Go memory holding a cgo.Handle of the
// callback (a plain integer, so the pinned memory holds no Go pointer).
type progressHandle struct {
	h cgo.Handle
}
