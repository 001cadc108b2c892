package jsonschema2gbnf

import "strconv"

// Option configures Convert. Options are validated: an invalid value makes
// Convert return an *OptionError.
type Option func(*options) error

// applyOptions applies opts (nil ones skipped) to the zero options.
func applyOptions(opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&o); err != nil {
			return options{}, err
		}
	}
	return o, nil
}

type options struct {
	flexible     bool // whitespace between tokens allowed
	maxIndent    int  // flexible: longest run of spaces/tabs after a newline
	noAdditional bool // forbid properties the schema does not name
	anyOrder     bool // properties in any order (small objects)
	lenient      bool
	warnings     *[]Warning
}

// DefaultMaxIndent is the indentation run FlexibleWhitespace allows when
// given 0: 40 columns is 20 levels of two-space indentation, deeper than
// any document of the corpus, while keeping the run short enough that a
// model cannot spend its budget on whitespace.
const DefaultMaxIndent = 40

// MaxIndentLimit bounds FlexibleWhitespace's argument. The run is a
// counted repetition (cheap for the automaton), but a larger indent is
// only a way to waste tokens.
const MaxIndentLimit = 256

// FlexibleWhitespace allows optional whitespace between JSON tokens: one
// space, or one newline followed by up to maxIndent spaces or tabs
// (0 means DefaultMaxIndent). That is exactly what pretty-printers write
// (json.MarshalIndent, JSON.stringify(v, null, 2), Python's indent=):
// `{`, `[` and `,` followed by a newline and the indentation, a space
// after `:`. Blank lines, trailing spaces and `\r` are not allowed: each
// gap has a bounded, tiny set of forms, so a model cannot loop on
// whitespace and the automaton stays small.
//
// The default (no option) is compact: no whitespace at all, which is the
// fewest tokens for the model to produce.
func FlexibleWhitespace(maxIndent int) Option {
	return func(o *options) error {
		if maxIndent < 0 || maxIndent > MaxIndentLimit {
			return &OptionError{"FlexibleWhitespace", "maxIndent " + strconv.Itoa(maxIndent) + " is outside 0.." + strconv.Itoa(MaxIndentLimit)}
		}
		if maxIndent == 0 {
			maxIndent = DefaultMaxIndent
		}
		o.flexible = true
		o.maxIndent = maxIndent
		return nil
	}
}

// ForbidAdditionalProperties makes every object accept only the
// properties its schema names (in `properties`, or matching
// `patternProperties`), as if `additionalProperties: false` were written
// wherever additionalProperties is absent or true. (An explicit
// additionalProperties schema is kept.) Without it, the grammar follows
// the schema: where additionalProperties is absent or true, any other key
// (any string except the declared names) may follow the declared
// properties, with any JSON value.
func ForbidAdditionalProperties() Option {
	return func(o *options) error {
		o.noAdditional = true
		return nil
	}
}

// MaxAnyOrderProperties is the largest number of declared properties for
// which AnyPropertyOrder applies. The grammar has one rule per subset of
// the properties already written (2^n), so 8 gives at most 256 rules per
// object; larger objects keep schema order.
const MaxAnyOrderProperties = 8

// AnyPropertyOrder lets the declared properties of objects with at most
// MaxAnyOrderProperties declared properties appear in any order (each at
// most once), other keys after them. Larger objects, and objects whose
// minProperties/maxProperties must be counted, keep schema order.
//
// The default is schema order: the properties appear in the order the
// schema declares them. The grammar then stays linear in the number of
// properties, the model sees one fixed layout (which is also how typed
// structs serialize), and a token-mask compiler has a small automaton.
func AnyPropertyOrder() Option {
	return func(o *options) error {
		o.anyOrder = true
		return nil
	}
}

// Lenient makes Convert relax, instead of rejecting, what the grammar
// cannot enforce exactly: each such keyword is ignored or approximated
// (the grammar then accepts a superset of the valid documents for that
// part; validate the output against the schema), and a Warning naming it
// is appended to *w. w may be nil to drop the warnings.
func Lenient(w *[]Warning) Option {
	return func(o *options) error {
		o.lenient = true
		o.warnings = w
		return nil
	}
}
