//go:build llamacpp

package llamacpp

import (
	"fmt"
	"testing"

	"github.com/structgen/structgen/engine"
)

// BenchmarkDecodeRows measures one decode step of the 128k-vocabulary
// model with one token of each of rows sequences (each with 50 to 150
// positions): how the model's cost grows with the batch, which bounds what
// batching can gain.
func BenchmarkDecodeRows(b *testing.B) {
	path, _ := llama3Model(b)
	{
		m := load(b, path, Options{ContextSize: 2048, Threads: 1, Sequences: 8})
		for _, rows := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
				for s := range 8 {
					m.Remove(s, 0)
				}
				var bt engine.Batch
				for s := range rows {
					for p := range 50 {
						bt.Add(s, p, int32(1000+p), false)
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
						bt.Add(s, pos, 1234, true)
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
