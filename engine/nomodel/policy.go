package nomodel

import (
	"fmt"
	"time"
)

// Policy is the structural sampling policy: how often optional parts
// appear, how long repetitions run, how often the schema author's own
// values are used, and where dates fall. The package documentation
// describes how each choice uses it.
type Policy struct {
	// OptionalRate in [0, 1] is the probability that an optional
	// property is present (required ones always are), and that an
	// optional part of a grammar (x?) is taken.
	OptionalRate float64
	// ExampleRate in [0, 1] is the probability that a value whose schema
	// has examples or a default takes one of them (uniformly; one the
	// grammar rejects in its context is skipped).
	ExampleRate float64
	// ExtraKeyRate in [0, 1] is the probability that an object with
	// declared properties that also allows other keys gets some (1 to
	// ArrayMax of them). Objects that declare no properties (maps) always
	// draw their number of keys like an array's length.
	ExtraKeyRate float64
	// ArrayMin and ArrayMax bound the length drawn for arrays, maps and
	// unbounded repetitions: a length is uniform over the intersection of
	// [ArrayMin, ArrayMax] with the schema's [minItems, maxItems] (or the
	// repetition's bounds); where they do not meet, the schema's bound
	// nearest to the range wins.
	ArrayMin, ArrayMax int
	// Today anchors dates: date-time and date values fall within Window
	// of it (the past for names like created_at, the future for
	// expires_at, 18 to 90 years back for birth dates). The zero value
	// means the current UTC date (so the same seed gives the same
	// instances on the same day; set Today to reproduce them any day).
	Today time.Time
	// Window is how far from Today dates may fall (0: DefaultWindow).
	Window time.Duration
	// AnyOrder says the grammar lets objects list their declared
	// properties in any order (jsonschema2gbnf.AnyPropertyOrder): the
	// properties an object gets are then written in a uniformly random
	// order, where the object declares at most
	// jsonschema2gbnf.MaxAnyOrderProperties of them (larger ones keep
	// schema order in the grammar too).
	AnyOrder bool
}

// Defaults of the policy.
const (
	DefaultOptionalRate = 0.5
	DefaultExampleRate  = 0.5
	DefaultExtraKeyRate = 0.1
	DefaultArrayMin     = 0
	DefaultArrayMax     = 4
	DefaultWindow       = 365 * 24 * time.Hour
	// MaxArrayLen bounds Policy.ArrayMax: test data, not load.
	MaxArrayLen = 10_000
	// MaxWindow bounds Policy.Window (200 years; time.Duration holds
	// about 292): dates stay within the years 0001-9999 that date-time
	// allows for any Today the policy accepts.
	MaxWindow = 200 * 365 * 24 * time.Hour
)

// DefaultPolicy returns the default policy.
func DefaultPolicy() Policy {
	return Policy{OptionalRate: DefaultOptionalRate, ExampleRate: DefaultExampleRate, ExtraKeyRate: DefaultExtraKeyRate,
		ArrayMin: DefaultArrayMin, ArrayMax: DefaultArrayMax, Window: DefaultWindow}
}

// Check validates the policy.
func (p *Policy) Check() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"OptionalRate", p.OptionalRate}, {"ExampleRate", p.ExampleRate}, {"ExtraKeyRate", p.ExtraKeyRate}} {
		if !(r.v >= 0 && r.v <= 1) {
			return fmt.Errorf("nomodel: %s %v out of range [0, 1]", r.name, r.v)
		}
	}
	if p.ArrayMin < 0 || p.ArrayMax < p.ArrayMin || p.ArrayMax > MaxArrayLen {
		return fmt.Errorf("nomodel: array length bounds [%d, %d]: want 0 <= min <= max <= %d", p.ArrayMin, p.ArrayMax, MaxArrayLen)
	}
	if p.Window < 0 || p.Window > MaxWindow {
		return fmt.Errorf("nomodel: date window %v out of range [0, %v]", p.Window, MaxWindow)
	}
	if !p.Today.IsZero() && (p.Today.Year() < 1000 || p.Today.Year() > 9000) {
		return fmt.Errorf("nomodel: Today %s: want a year in 1000-9000", p.Today.Format("2006-01-02"))
	}
	return nil
}

// Source says where a generated value came from (Stats, Params.OnValue).
type Source uint8

const (
	// SourceEnum: a member of the schema's enum or its const.
	SourceEnum Source = iota
	// SourceExample: one of the schema's examples.
	SourceExample
	// SourceDefault: the schema's default.
	SourceDefault
	// SourceGenerator: a realistic generator (by format, name or
	// annotation), a pattern derivation, or a plain value of its type
	// (number in range, boolean, null, words).
	SourceGenerator
	// SourceFallback: the grammar itself chose the value byte by byte,
	// because no proposal fitted it.
	SourceFallback
	numSources
)

var sourceNames = [numSources]string{"enum", "example", "default", "generator", "fallback"}

func (s Source) String() string {
	if s < numSources {
		return sourceNames[s]
	}
	return fmt.Sprintf("Source(%d)", int(s))
}

// Stats counts the values of the sentences drawn since the sampler was
// made or Reset, by source. Proposals counts the realistic proposals
// fed to the matcher and Rejected those it rejected.
type Stats struct {
	Values    [numSources]int
	Proposals int
	Rejected  int
}

// Value describes one generated scalar value (Params.OnValue): its JSON
// pointer (array indices as numbers), its source, the generator that made
// it (empty for enum, examples, default and fallback) and its JSON text.
type Value struct {
	Pointer   string
	Source    Source
	Generator string
	Text      []byte
}
