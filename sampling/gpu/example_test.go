package gpu_test

import (
	"fmt"

	"github.com/structgen/structgen/sampling/gpu"
)

// Sample is the Gumbel-max sampler: one streaming pass over the logits,
// no sort and no softmax. The draw depends only on the logits, the
// position and the seed offset, so the device kernel and this code agree
// token for token.
func ExampleSample() {
	logits := []float32{0.5, 3, 1, 2.5}
	fmt.Println(gpu.Sample(logits, nil, 0, gpu.Params{})) // temperature 0: argmax

	p := gpu.Params{Temperature: 1, TopK: 2, SeedOffset: 9}
	counts := map[int32]int{}
	for pos := range uint32(1000) {
		counts[gpu.Sample(logits, nil, pos, p)]++
	}
	fmt.Println(len(counts), counts[1] > counts[3], gpu.Sample(logits, nil, 5, p) == gpu.Sample(logits, nil, 5, p))
	// Output:
	// 1
	// 2 true true
}
