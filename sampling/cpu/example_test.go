package cpu_test

import (
	"fmt"

	"github.com/structgen/structgen/sampling/cpu"
)

// A chain samples token ids from logits; Temperature 0 is greedy.
func ExampleNewChain() {
	logits := []float32{0.5, 3, 1, 2.5}
	greedy, err := cpu.NewChain(cpu.Params{Temperature: 0})
	if err != nil {
		panic(err)
	}
	fmt.Println(greedy.Sample(logits))

	// Top-k 2 keeps tokens 1 and 3; the seed makes the draws repeatable.
	c, _ := cpu.NewChain(cpu.Params{Temperature: 1, TopK: 2, Seed: 42})
	counts := map[int32]int{}
	for range 1000 {
		tok := c.Sample(logits)
		c.Accept(tok) // history for penalties, DRY and mirostat
		counts[tok]++
	}
	fmt.Println(len(counts), counts[1] > counts[3])
	// Output:
	// 1
	// 2 true
}

// An order names the samplers to run, by llama.cpp's names; DropUnordered
// turns off the ones it leaves out (as llama.cpp's --samplers does), so
// that llama.cpp's defaults can be kept for the rest.
func ExampleParams_DropUnordered() {
	p := cpu.LlamaDefaults() // top-k 40, top-p 0.95, min-p 0.05, temperature 0.8
	p.Samplers = []string{"top_k", "temperature"}
	_, err := cpu.NewChain(p)
	fmt.Println(err != nil) // top-p and min-p are on but not in the order
	p = p.DropUnordered()
	_, err = cpu.NewChain(p)
	fmt.Println(err, p.TopK, p.TopP, p.MinP, p.Temperature)
	// Output:
	// true
	// <nil> 40 0 0 0.8
}
