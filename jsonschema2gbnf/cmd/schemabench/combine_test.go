package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/structgen/structgen/internal/madvfree"
	"github.com/structgen/structgen/jsonschema2gbnf/internal/schemabench"
)

// TestCombine checks that each grammar's best value over the runs is
// taken per grammar (not per run), that grammars missing from a run are
// left out, and that a file of another kind is an error.
func TestCombine(t *testing.T) {
	dir := t.TempDir()
	const head = "id\tgrammar\tconvert_us\tparse_us\tcompile_us\tgrammar_bytes\tslowest_step_us\tfirst_use_units\tprecompute_us\tfirst_use_us\tslowest_idle_step_us\n"
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(head+body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// a is slow in run 1, b in run 2: each run's max slowest step is 900
	// µs, the best per grammar 20 and 30. c is only in run 1.
	r1 := write("r1.tsv", "a\tstrict\t1\t1\t1\t10\t900\t0\t5\t0\t900\nb\tstrict\t1\t1\t1\t10\t30\t0\t5\t120\t50\nc\tlenient\t1\t1\t1\t10\t1000\t0\t5\t0\t1000\n")
	r2 := write("r2.tsv", "a\tstrict\t1\t1\t1\t10\t20\t0\t5\t0\t50\nb\tstrict\t1\t1\t1\t10\t900\t0\t5\t150\t700\n")
	var b bytes.Buffer
	if err := combine([]string{r1, r2}, &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"2 runs; 2 grammars in every run (of 3 in the first)",
		"run 1:  p50 900µs, p90 900µs, p95 900µs, p99 900µs, max 900µs; 1 at 200 µs or more",
		"best of the runs per grammar: p50 30µs, p90 30µs, p95 30µs, p99 30µs, max 30µs; 0 at 200 µs or more",
		"best of the runs per grammar: p50 120µs, p90 120µs, p95 120µs, p99 120µs, max 120µs; 1 at 100 µs or more",
		// the idle steps: a 900 and 50, b 50 and 700
		"best of the runs per grammar: p50 50µs, p90 50µs, p95 50µs, p99 50µs, max 50µs; 0 at 200 µs or more",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	bad := filepath.Join(dir, "bad.tsv")
	os.WriteFile(bad, []byte("x\ty\n"), 0o644)
	if err := combine([]string{r1, bad}, &b); err == nil || !strings.Contains(err.Error(), "not a -times file") {
		t.Errorf("bad file: %v", err)
	}
	short := filepath.Join(dir, "short.tsv")
	os.WriteFile(short, []byte("id\tgrammar\tconvert_us\na\tstrict\t1\n"), 0o644)
	if err := combine([]string{r1, short}, &b); err == nil || !strings.Contains(err.Error(), "no column parse_us") {
		t.Errorf("missing columns: %v", err)
	}
	// Files of the versions before an optional measure's columns (the
	// machine floor; the system time and page faults) combine without
	// that measure; with its columns in every run, the measure is there.
	for _, oc := range []struct {
		name, cols, vals1, vals2, want string
	}{
		{"machine floor", "floor_step_us", "250", "40", "best of the runs per grammar: p50 40µs, p90 40µs, p95 40µs, p99 40µs, max 40µs; 0 at 200 µs or more"},
		{"system time", "prep_sys_us\tprep_minflt", "300\t70", "40\t2", "best of the runs per grammar: p50 40µs, p90 40µs, p95 40µs, p99 40µs, max 40µs"},
	} {
		if !strings.Contains(out, "first-use time") || strings.Contains(out, oc.name) {
			t.Errorf("without %s:\n%s", oc.cols, out)
		}
		with := func(name, row, vals string) string {
			p := filepath.Join(dir, name)
			os.WriteFile(p, []byte(strings.TrimSuffix(head, "\n")+"\t"+oc.cols+"\n"+row+"\t"+vals+"\n"), 0o644)
			return p
		}
		o1 := with(oc.cols+"1.tsv", "a\tstrict\t1\t1\t1\t10\t900\t0\t5\t0\t900", oc.vals1)
		o2 := with(oc.cols+"2.tsv", "a\tstrict\t1\t1\t1\t10\t20\t0\t5\t0\t50", oc.vals2)
		var fb bytes.Buffer
		if err := combine([]string{o1, o2}, &fb); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(fb.String(), oc.name) || !strings.Contains(fb.String(), oc.want) {
			t.Errorf("with %s: missing %q in:\n%s", oc.cols, oc.want, fb.String())
		}
		fb.Reset()
		if err := combine([]string{o1, r2}, &fb); err != nil || strings.Contains(fb.String(), oc.name) {
			t.Errorf("%s in one run only: %v\n%s", oc.name, err, fb.String())
		}
	}
	if err := combine([]string{r1}, &b); err == nil {
		t.Error("one file: no error")
	}
	trunc := write("trunc.tsv", "a\tstrict\t1\tx\t1\t10\t900\t0\t5\t0\t0\n")
	if err := combine([]string{r1, trunc}, &b); err == nil || !strings.Contains(err.Error(), "trunc.tsv:2: column parse_us") {
		t.Errorf("bad number: %v", err)
	}
}

// FuzzReadTimes checks that any file content reads as rows or an error,
// never a panic, and that rows keep every column they were given.
func FuzzReadTimes(f *testing.F) {
	f.Add("id\tgrammar\tconvert_us\nx\tstrict\t12\n")
	f.Add("id\tgrammar\ta\tb\nx\tstrict\t1\n")
	f.Add("id\tgrammar\n\"x\ty\n")
	f.Add("")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body string) {
		p := filepath.Join(dir, "t.tsv")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		rows, err := readTimes(p)
		if err != nil {
			return
		}
		for k, r := range rows {
			if k != r.key || !strings.Contains(k, "\t") {
				t.Fatalf("row key %q for %q", r.key, k)
			}
		}
	})
}

// TestWriteTimes checks that a -times file has the floor's column only
// with the floor, and that -combine reads it either way.
func TestWriteTimes(t *testing.T) {
	dir := t.TempDir()
	rs := []*schemabench.Result{{ID: "d/a", Strict: "ok", ConvertDur: 3 * time.Microsecond, ParseDur: 1, PrepareDur: time.Millisecond, GrammarLen: 7,
		WalkSlowest: 40 * time.Microsecond, WalkFirstUse: 9, PreDur: time.Millisecond, WalkFirstUseTime: 2 * time.Microsecond,
		WalkSlowestIdle: 5 * time.Microsecond, WalkFloor: 25 * time.Microsecond, PrepSys: 6 * time.Microsecond, PrepFaults: 11}}
	for _, floor := range []bool{true, false} {
		p := filepath.Join(dir, fmt.Sprintf("t%v.tsv", floor))
		if err := writeTimes(p, rs, floor); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(p)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) != 2 {
			t.Fatalf("floor %v: %d lines", floor, len(lines))
		}
		head, row := strings.Split(lines[0], "\t"), strings.Split(lines[1], "\t")
		if len(head) != len(row) || slices.Contains(head, "floor_step_us") != floor {
			t.Errorf("floor %v: header %q, row %q", floor, head, row)
		}
		// every field of rs is set: a column written as 0 is one the
		// writer does not fill (ParseDur rounds to 0 µs)
		for i, v := range row {
			if v == "0" && head[i] != "parse_us" {
				t.Errorf("floor %v: column %s written as 0", floor, head[i])
			}
		}
		rows, err := readTimes(p)
		if err != nil {
			t.Fatal(err)
		}
		r := rows["d/a\tstrict"]
		if r.cols["convert_us"] != 3 || r.cols["slowest_step_us"] != 40 {
			t.Errorf("floor %v: read %v", floor, r.cols)
		}
		if r.cols["prep_sys_us"] != 6 || r.cols["prep_minflt"] != 11 {
			t.Errorf("floor %v: system time and faults read %v", floor, r.cols)
		}
		if v, ok := r.cols["floor_step_us"]; ok != floor || (floor && v != 25) {
			t.Errorf("floor %v: floor column %v, %v", floor, v, ok)
		}
	}
}

func TestPretouchNote(t *testing.T) {
	for _, tc := range []struct {
		r    madvfree.PretouchResult
		want string
	}{
		{madvfree.PretouchResult{}, "heap not pretouched"},
		{madvfree.PretouchResult{Bytes: 256 << 20, Faults: 65_600, Took: 771400 * time.Microsecond}, "heap pretouched as in structgen serve: 256 MiB, 65600 faults, 771ms"},
	} {
		if got := pretouchNote(tc.r); got != tc.want {
			t.Errorf("pretouchNote(%+v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}

func TestFloorNote(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, "no GC floor"},
		{256 << 20, "GC floor 256 MiB as in structgen serve"},
	} {
		if got := floorNote(tc.n); got != tc.want {
			t.Errorf("floorNote(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
