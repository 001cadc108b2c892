// Command schemafuzz is the long run of jsonschema2gbnf's differential
// fuzzer (package internal/difffuzz): it generates random schemas from the
// grammar of schemas, converts each in strict mode, judges random
// instances, the grammar's sentences and their mutations with the
// validator and with the grammar, and decodes random walks through the
// token mask with the Llama-3 and Qwen2 vocabularies; every completed
// document must be valid. It stops after -n schemas or -duration,
// whichever comes first, prints the counts and every failure, and exits 1
// if there was one (2 on a usage error). A schema whose check runs longer
// than -hang is reported as a failure (a hang) and ends the run.
//
//	go run ./jsonschema2gbnf/cmd/schemafuzz -n 2000 -seed 1
//	go run ./jsonschema2gbnf/cmd/schemafuzz -duration 10m -vocab none
//
// Memory stays below a few hundred MB (the two vocabularies and one
// compiled grammar at a time); run it under a cap on a shared machine
// (prlimit --as=8000000000 -- …).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf/internal/difffuzz"
)

func main() {
	n := flag.Int("n", 1000, "schemas to generate")
	dur := flag.Duration("duration", 0, "stop after this long (0: only -n)")
	seed := flag.Int64("seed", 1, "seed of the first schema (schema i uses seed+i)")
	instances := flag.Int("instances", 24, "random instances per schema")
	sentences := flag.Int("sentences", 6, "grammar sentences per schema (each also mutated twice)")
	walks := flag.Int("walks", 2, "random walks per vocabulary and schema")
	steps := flag.Int("steps", 96, "tokens per walk before the close-out")
	vocabs := flag.String("vocab", "llama3,qwen2", "walk vocabularies (comma-separated), or none")
	hang := flag.Duration("hang", 2*time.Minute, "a schema taking longer is reported as a hang")
	out := flag.String("out", "", "write each failure to a file in this folder")
	verbose := flag.Bool("v", false, "print progress every 100 schemas")
	flag.Parse()
	if *n <= 0 || *instances < 0 || *sentences < 0 || *walks < 0 || *steps <= 0 {
		fmt.Fprintln(os.Stderr, "schemafuzz: -n and -steps must be positive, the other counts not negative")
		os.Exit(2)
	}
	o := difffuzz.Options{Instances: *instances, Sentences: *sentences, MaxBytes: 400, Walks: *walks, Steps: *steps, Lenient: true}
	if *vocabs != "none" && *walks > 0 {
		shared, why := sharedtest.Find()
		if shared == "" {
			fmt.Fprintln(os.Stderr, "schemafuzz:", why, "(use -vocab none to run without walks)")
			os.Exit(2)
		}
		for _, name := range strings.Split(*vocabs, ",") {
			v, err := difffuzz.LoadVocab(shared, name)
			if err != nil {
				fmt.Fprintln(os.Stderr, "schemafuzz:", err)
				os.Exit(2)
			}
			o.Vocabs = append(o.Vocabs, v)
		}
	}
	total := difffuzz.NewStats()
	start := time.Now()
	for i := 0; i < *n; i++ {
		if *dur > 0 && time.Since(start) > *dur {
			break
		}
		s := *seed + int64(i)
		ch := difffuzz.Seeded(s)
		schema := difffuzz.Schema(ch)
		st := difffuzz.NewStats()
		done := make(chan struct{})
		go func() {
			defer close(done)
			difffuzz.Check(ch, schema, o, st)
		}()
		select {
		case <-done:
		case <-time.After(*hang):
			fmt.Printf("HANG (seed %d, over %v): %s\n", s, *hang, schema)
			fmt.Print(total.Summary())
			os.Exit(1)
		}
		for _, f := range st.Failures {
			fmt.Printf("FAILURE (seed %d): %s\n", s, f)
			if *out != "" {
				name := filepath.Join(*out, fmt.Sprintf("seed-%d-%s.txt", s, f.Kind))
				if err := os.WriteFile(name, []byte(f.String()+"\n"), 0o644); err != nil {
					fmt.Fprintln(os.Stderr, "schemafuzz:", err)
				}
			}
		}
		total.Add(st)
		if *verbose && (i+1)%100 == 0 {
			fmt.Printf("%d schemas, %v: %d pairs, %d walks, %d failures\n", i+1, time.Since(start).Round(time.Second), total.Pairs, total.Walks, len(total.Failures))
		}
	}
	fmt.Printf("seeds %d… (%v)\n", *seed, time.Since(start).Round(time.Second))
	fmt.Print(total.Summary())
	if *verbose {
		for i, f := range total.RejectedExamples {
			if i == 10 {
				break
			}
			fmt.Printf("valid, rejected once formatted:\n  schema: %s\n  doc:    %s\n", f.Schema, f.Doc)
		}
	}
	if len(total.Failures) > 0 {
		os.Exit(1)
	}
}
