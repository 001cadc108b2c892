// Command schemabench converts the JSONSchemaBench sample with
// jsonschema2gbnf and prints the per-dataset table: schemas that convert
// in strict and lenient mode, and for the strict grammars how many valid
// instances (re-serialized with jsonschema2gbnf.Format) are accepted and
// invalid ones rejected. It also prints convert time percentiles.
//
//	go run ./jsonschema2gbnf/cmd/schemabench [-corpus dir] [-instances] [-flexible] [-accept earley|mask] [-v] [-only Dataset/name]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/structgen/structgen/internal/llama3vocab"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf/internal/schemabench"
)

func main() {
	corpus := flag.String("corpus", "", "jsonschemabench folder (default ../shared/corpus/jsonschemabench)")
	instances := flag.Bool("instances", true, "check instance agreement")
	flexible := flag.Bool("flexible", false, "flexible whitespace")
	verbose := flag.Bool("v", false, "print every failing schema with its error")
	only := flag.String("only", "", "only schemas whose id contains this")
	accept := flag.String("accept", "earley", "acceptance check: earley (reference recognizer) or mask (token-mask automaton, Llama-3 vocabulary)")
	flag.Parse()
	dir := *corpus
	if dir == "" {
		d, why := sharedtest.Find()
		if d == "" {
			fmt.Fprintln(os.Stderr, "schemabench:", why)
			os.Exit(2)
		}
		dir = filepath.Join(d, "corpus", "jsonschemabench")
	}
	cases, err := schemabench.Load(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemabench:", err)
		os.Exit(1)
	}
	o := schemabench.Options{Instances: *instances}
	if *accept == "mask" {
		d, _ := sharedtest.Find()
		v, err := llama3vocab.Load(d)
		if err != nil {
			fmt.Fprintln(os.Stderr, "schemabench:", err)
			os.Exit(1)
		}
		o.Accept = schemabench.Matcher(v)
	}
	if *flexible {
		o.Convert = append(o.Convert, jsonschema2gbnf.FlexibleWhitespace(0))
	}
	if *only != "" {
		o.Filter = func(c *schemabench.Case) bool { return strings.Contains(c.ID(), *only) }
	}
	rs := schemabench.Run(cases, o)
	var durs, total []time.Duration
	prepFail := 0
	for _, r := range rs {
		if r.PrepareErr != "" {
			prepFail++
			if *verbose {
				fmt.Printf("%s: acceptance check could not prepare the grammar: %s\n", r.ID, r.PrepareErr)
			}
		}
		if r.Strict == "ok" {
			durs = append(durs, r.ConvertDur)
			total = append(total, r.ConvertDur+r.PrepareDur)
		}
		if *verbose && (r.Strict != "ok" || len(r.Failures) > 0) {
			fmt.Printf("%s: strict=%s lenient=%s %s\n", r.ID, r.Strict, r.Lenient, r.StrictErr)
			for _, f := range r.Failures {
				fmt.Printf("    %s\n", f)
			}
		}
	}
	fmt.Print(schemabench.FormatTable(schemabench.Table(rs)))
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	sort.Slice(total, func(i, j int) bool { return total[i] < total[j] })
	if n := len(durs); n > 0 {
		fmt.Printf("\nconvert time per schema (strict, converted): p50 %v, p95 %v, max %v (n=%d)\n",
			durs[n/2], durs[n*95/100], durs[n-1], n)
		if *accept == "mask" && *instances {
			fmt.Printf("convert + mask.Compile (Llama-3 vocabulary): p50 %v, p95 %v, max %v; %d grammars over a mask.Compile limit (instances not checked)\n",
				total[n/2], total[n*95/100], total[n-1], prepFail)
		}
	}
}
