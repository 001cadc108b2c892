package engine_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/engine/nomodel"
	"github.com/structgen/structgen/internal/sharedtest"
)

var corpusFull = flag.Bool("nomodel.full", os.Getenv("STRUCTGEN_CORPUS_FULL") == "1", "TestNoModelCorpus: every schema of the corpus sample instead of every 8th")

// nomodelCorpusStride samples the corpus in the default run: every 8th
// schema (about 280, 20 instances each) keeps the test to about 12 s on
// an idle core of the 2-core development machine; -nomodel.full (or
// STRUCTGEN_CORPUS_FULL=1) runs all 2,238 (6 minutes at load 10).
const nomodelCorpusStride = 8

// knownUnsound lists corpus schemas whose strict grammar accepts a
// document the validator rejects: a jsonschema2gbnf bug, not the
// sampler's (the grammar is the sampler's authority). They are logged,
// not failed, until the converter is fixed.
var knownUnsound = map[string]string{
	// {"type":"string","oneOf":[{"enum":[…]},{}]}: an enum member matches
	// both branches, yet the grammar of the second is any string.
	"JsonSchemaStore/base-04": "oneOf whose second branch is {} does not exclude the first branch's enum",
	"JsonSchemaStore/base":    "the same editor definition as base-04",
}

// TestNoModelCorpus draws 20 realistic instances of every schema of the
// corpus sample that converts strictly; Generate validates each with
// santhosh-tekuri/jsonschema, so any invalid instance fails the test.
func TestNoModelCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus run skipped in -short mode")
	}
	schemas, err := sharedtest.CorpusSchemas(sharedtest.Dir(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	stride := nomodelCorpusStride
	if *corpusFull {
		stride = 1
	}
	ctx := context.Background()
	today := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	start := time.Now()
	checked, instances, closed := 0, 0, 0
	for i, c := range schemas {
		if i%stride != 0 {
			continue
		}
		e, err := engine.New(nil, engine.WithSchema(c.Schema), engine.WithDates(today, 0))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Compile(); err != nil {
			continue // not strictly convertible (or over a compile limit)
		}
		checked++
		for k := range 20 {
			res, err := e.Generate(ctx, "", engine.WithSeed(uint32(k)))
			if errors.Is(err, nomodel.ErrBudget) {
				// A schema whose shortest instance is over the default
				// byte budget: give it room.
				res, err = e.Generate(ctx, "", engine.WithSeed(uint32(k)), engine.WithMaxBytes(1<<16))
			}
			var ve *engine.ValidationError
			if errors.As(err, &ve) {
				if why, ok := knownUnsound[c.ID]; ok {
					t.Logf("%s seed %d: known grammar bug (%s): %v", c.ID, k, why, ve.Err)
					continue
				}
				t.Errorf("%s seed %d: invalid instance %.300s: %v", c.ID, k, ve.Output, ve.Err)
				continue
			}
			if err != nil {
				t.Errorf("%s seed %d: %v", c.ID, k, err)
				continue
			}
			instances++
			if res.Stop == engine.StopBudget {
				closed++
			}
		}
	}
	t.Logf("%d schemas, %d valid instances (%d closed out at the byte budget) in %v", checked, instances, closed, time.Since(start).Round(time.Millisecond))
}
