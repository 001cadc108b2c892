package adversarial_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/structgen/structgen/internal/adversarial"
	"github.com/structgen/structgen/internal/llama3vocab"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/mask"
)

// watchdogFactor: a run whose live heap passes this many times its bound
// stops the test binary at once, so that a regression cannot take the
// machine's memory.
const watchdogFactor = 4

// TestAdversarial runs every case of testdata/adversarial: each must
// succeed or fail as its spec says, allocating at most its alloc bound
// and reaching at most its heap bound of live heap. Run with -v for the
// measurements (time is logged, never asserted).
func TestAdversarial(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "adversarial")
	cases, err := adversarial.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("no cases in %s", dir)
	}
	bytesVocab := byteVocab(t)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if c.Short && testing.Short() {
				t.Skip("long case (-short)")
			}
			var v *mask.Vocab
			switch c.Vocab {
			case "bytes":
				v = bytesVocab
			case "llama3":
				var err error
				if v, err = llama3vocab.Load(sharedtest.Dir(t)); err != nil {
					t.Fatal(err)
				}
			default:
				t.Fatalf("%s: unknown vocab %q", c.File, c.Vocab)
			}
			if v != nil {
				mask.PrepareVocab(v) // once per vocabulary: not the case's cost
			}
			err, m := measure(c, func() error { return c.Run(context.Background(), v) })
			t.Logf("%s: %v, allocated %s, live heap +%s; error: %v", c.Name, m.dur.Round(time.Millisecond), mb(m.alloc), mb(m.heap), err)
			switch {
			case c.WantErr == "" && err != nil:
				t.Errorf("%s: %v, want success", c.File, err)
			case c.WantErr != "" && err == nil:
				t.Errorf("%s: success, want an error containing %q", c.File, c.WantErr)
			case c.WantErr != "" && !strings.Contains(err.Error(), c.WantErr):
				t.Errorf("%s: error %v, want one containing %q", c.File, err, c.WantErr)
			}
			if c.Alloc > 0 && m.alloc > c.Alloc {
				t.Errorf("%s: allocated %s, bound %s", c.File, mb(m.alloc), mb(c.Alloc))
			}
			if c.Heap > 0 && m.heap > c.Heap {
				t.Errorf("%s: live heap +%s, bound %s", c.File, mb(m.heap), mb(c.Heap))
			}
		})
	}
}

type measurement struct {
	dur         time.Duration
	alloc, heap uint64
}

// measure runs f, sampling the live heap every millisecond.
func measure(c *adversarial.Case, f func() error) (error, measurement) {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var ms runtime.MemStats
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			runtime.ReadMemStats(&ms)
			h := ms.HeapAlloc - min(ms.HeapAlloc, before.HeapAlloc)
			if h > peak.Load() {
				peak.Store(h)
			}
			if c.Heap > 0 && h > watchdogFactor*c.Heap {
				fmt.Fprintf(os.Stderr, "adversarial %s: live heap +%s is over %d times its bound %s: stopping\n", c.File, mb(h), watchdogFactor, mb(c.Heap))
				os.Exit(2)
			}
		}
	}()
	start := time.Now()
	err := f()
	dur := time.Since(start)
	close(done)
	<-stopped
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if h := after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc); h > peak.Load() {
		peak.Store(h)
	}
	return err, measurement{dur: dur, alloc: after.TotalAlloc - before.TotalAlloc, heap: peak.Load()}
}

func mb(n uint64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }

// byteVocab is the 256 single bytes and an end-of-generation token.
func byteVocab(t *testing.T) *mask.Vocab {
	var toks [][]byte
	for b := range 256 {
		toks = append(toks, []byte{byte(b)})
	}
	toks = append(toks, []byte("</s>"))
	v, err := mask.NewVocab(toks, []int32{256})
	if err != nil {
		t.Fatal(err)
	}
	return v
}
