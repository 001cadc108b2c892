package cpu

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// A sampler left out of the order is not used: DropUnordered turns its
// parameters off, so llama.cpp's defaults plus an order that omits top_p
// and min_p is a valid chain, and it draws exactly what a chain with only
// the named samplers draws.
func TestDropUnordered(t *testing.T) {
	all := LlamaDefaults()
	all.RepeatPenalty, all.DRYMultiplier, all.TopNSigma, all.TypicalP, all.XTCProbability, all.XTCThreshold = 1.1, 0.8, 2, 0.9, 0.5, 0.1
	for _, tc := range []struct {
		order []string
		only  Params // the same chain, written with only the named samplers
	}{
		{[]string{"top_k", "temperature"}, Params{TopK: 40, Temperature: 0.8}},
		{[]string{"top-k", "temp"}, Params{TopK: 40, Temperature: 0.8}},
		{[]string{"min_p", "top_p"}, Params{MinP: 0.05, TopP: 0.95, Temperature: 1}},
		{[]string{"top_k"}, Params{TopK: 40, Temperature: 1}},
		{[]string{"penalties", "typ_p", "temperature"}, Params{RepeatPenalty: 1.1, TypicalP: 0.9, Temperature: 0.8}},
	} {
		p := all
		p.Samplers = tc.order
		if _, err := NewChain(p); err == nil {
			t.Fatalf("%v: NewChain accepted samplers that are on but not in the order", tc.order)
		}
		p = p.DropUnordered()
		tc.only.Samplers = tc.order
		got, want := mustChain(t, p), mustChain(t, tc.only)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range 200 {
			logits := randomLogits(rng, 300, 3)
			a, b := got.Sample(logits), want.Sample(logits)
			if a != b {
				t.Fatalf("%v: draw %d: %d, want %d", tc.order, i, a, b)
			}
			got.Accept(a)
			want.Accept(b)
		}
	}
	for _, name := range DefaultOrder {
		if samplerOff[name] == nil {
			t.Errorf("DropUnordered cannot turn %s off", name)
		}
	}
	// The default order and mirostat are left alone.
	if p := LlamaDefaults(); !reflect.DeepEqual(p.DropUnordered(), p) {
		t.Error("DropUnordered changed the default order's parameters")
	}
}
