//go:build llamacpp

package llamacpp

import (
	"fmt"
	"testing"

	"github.com/structgen/structgen/engine"
)

// BenchmarkDecodeRows measures one decode step of the 128k-vocabulary
// model and of stories260K with one token of each of rows sequences (each
// with 50 to 150 positions), on one thread and on two: how the model's
// cost grows with the batch, which bounds what batching can gain.
func BenchmarkDecodeRows(b *testing.B) {
	llama3, _ := llama3Model(b)
	for _, model := range []struct{ name, path string }{{"llama3", llama3}, {"stories", storiesPath(b)}} {
		for _, threads := range []int{1, 2} {
			m := load(b, model.path, Options{ContextSize: 2048, Threads: threads, Sequences: 8})
			for _, rows := range []int{1, 2, 4, 8} {
				b.Run(fmt.Sprintf("%s/threads=%d/rows=%d", model.name, threads, rows), func(b *testing.B) {
					for s := range 8 {
						m.Remove(s, 0)
					}
					var bt engine.Batch
					for s := range rows {
						for p := range 50 {
							bt.Add(s, p, int32(100+p), false)
						}
					}
					if err := m.Decode(&bt); err != nil {
						b.Fatal(err)
					}
					pos := 50
					b.ReportAllocs()
					for b.Loop() {
						bt.Reset()
						for s := range rows {
							bt.Add(s, pos, 321, true)
						}
						if err := m.Decode(&bt); err != nil {
							b.Fatal(err)
						}
						pos++
						if pos == 150 {
							for s := range rows {
								m.Remove(s, 50)
							}
							pos = 50
						}
					}
					b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/step")
					b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "tok/s")
				})
			}
		}
	}
}
