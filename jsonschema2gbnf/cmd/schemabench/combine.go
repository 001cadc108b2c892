package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// timesRow is one line of a -times file: the schema (and which grammar)
// and its columns by name, in µs (or units, bytes).
type timesRow struct {
	key    string // id and grammar
	strict bool
	cols   map[string]int64
}

// readTimes reads a file written by -times.
func readTimes(path string) (map[string]timesRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comma = '\t'
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(head) < 2 || head[0] != "id" || head[1] != "grammar" {
		return nil, fmt.Errorf("%s: not a -times file (header %q)", path, strings.Join(head, "\t"))
	}
	// every column a measure reads (a missing one would read as 0),
	// but those of optional measures
	for _, name := range timesHeader[2:] {
		if !slices.Contains(head, name) && !optionalColumn(name) {
			return nil, fmt.Errorf("%s: no column %s (not a -times file of this version)", path, name)
		}
	}
	rows := map[string]timesRow{}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		row := timesRow{key: rec[0] + "\t" + rec[1], strict: rec[1] == "strict", cols: map[string]int64{}}
		for i := 2; i < len(rec) && i < len(head); i++ {
			v, err := strconv.ParseInt(rec[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: column %s: %w", path, line, head[i], err)
			}
			row.cols[head[i]] = v
		}
		rows[row.key] = row
	}
}

// combineMeasure is a per-grammar measure of a -times row.
type combineMeasure struct {
	name       string
	strictOnly bool
	value      func(cols map[string]int64) int64 // µs
	over       int64                             // count the grammars at or above this (0: do not)
	// optional is the column of a measure that files of earlier versions
	// lack: the measure is left out unless every run has it.
	optional string
}

var combineMeasures = []combineMeasure{
	{name: "convert+parse+compile (strict)", strictOnly: true, value: func(c map[string]int64) int64 { return c["convert_us"] + c["parse_us"] + c["compile_us"] }},
	{name: "Precompute (strict)", strictOnly: true, value: func(c map[string]int64) int64 { return c["precompute_us"] }},
	{name: "system time of convert+parse+compile (strict; the process's: page faults)", strictOnly: true, value: func(c map[string]int64) int64 { return c["prep_sys_us"] }, optional: "prep_sys_us"},
	{name: "slowest step (mask + accept)", value: func(c map[string]int64) int64 { return c["slowest_step_us"] }, over: 200},
	{name: "slowest step that computed no state on first use", value: func(c map[string]int64) int64 { return c["slowest_idle_step_us"] }, over: 200},
	{name: "first-use time, most in one step", value: func(c map[string]int64) int64 { return c["first_use_us"] }, over: 100},
	{name: "machine floor: slowest fixed arithmetic step, as many and as long in all as the generations' steps", value: func(c map[string]int64) int64 { return c["floor_step_us"] }, over: 200, optional: "floor_step_us"},
}

// combine reads the -times files of several runs over the same corpus
// and prints, for each measure, the percentiles of every run and those
// of each grammar's best (smallest) value over the runs. The runs do
// the same work per grammar (the same grammars, automata, precomputed
// states and random generations), so what a grammar's best value leaves
// out is what varied from run to run: the machine (other processes, the
// hypervisor, page faults, collections).
func combine(paths []string, w io.Writer) error {
	if len(paths) < 2 {
		return fmt.Errorf("-combine needs at least two -times files")
	}
	runs := make([]map[string]timesRow, len(paths))
	for i, p := range paths {
		rows, err := readTimes(p)
		if err != nil {
			return err
		}
		runs[i] = rows
	}
	var keys []string
	for k := range runs[0] {
		in := true
		for _, r := range runs[1:] {
			if _, ok := r[k]; !ok {
				in = false
				break
			}
		}
		if in {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	fmt.Fprintf(w, "%d runs; %d grammars in every run (of %d in the first)\n", len(runs), len(keys), len(runs[0]))
	for _, m := range combineMeasures {
		if m.optional != "" && slices.ContainsFunc(runs, func(r map[string]timesRow) bool { return !everyRowHas(r, m.optional) }) {
			continue
		}
		per := make([][]time.Duration, len(runs))
		var best []time.Duration
		for _, k := range keys {
			if m.strictOnly && !runs[0][k].strict {
				continue
			}
			b := int64(-1)
			for i, r := range runs {
				v := m.value(r[k].cols)
				per[i] = append(per[i], time.Duration(v)*time.Microsecond)
				if b < 0 || v < b {
					b = v
				}
			}
			best = append(best, time.Duration(b)*time.Microsecond)
		}
		if len(best) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s (n=%d):\n", m.name, len(best))
		for i, p := range per {
			fmt.Fprintf(w, "  run %d:  %s%s\n", i+1, pcts(p), countOver(p, m.over))
		}
		fmt.Fprintf(w, "  best of the runs per grammar: %s%s\n", pcts(best), countOver(best, m.over))
	}
	return nil
}

// optionalColumn reports whether name is an optional measure's column,
// or another column files of earlier versions lack.
func optionalColumn(name string) bool {
	return name == "prep_minflt" || slices.ContainsFunc(combineMeasures, func(m combineMeasure) bool { return m.optional == name })
}

// everyRowHas reports whether every row of a run has column name.
func everyRowHas(rows map[string]timesRow, name string) bool {
	for _, r := range rows {
		if _, ok := r.cols[name]; !ok {
			return false
		}
	}
	return true
}

// countOver says how many of ds are at least over µs (nothing if over is 0).
func countOver(ds []time.Duration, over int64) string {
	if over == 0 {
		return ""
	}
	n := 0
	for _, d := range ds {
		if d >= time.Duration(over)*time.Microsecond {
			n++
		}
	}
	return fmt.Sprintf("; %d at %d µs or more", n, over)
}
